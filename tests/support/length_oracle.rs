//! The sequential length projection the CPU path ran before the parallel solver of
//! `yarnsim::length`, kept as the oracle of `tests/gpu_length.rs`: per yarn, Fast Projection with the
//! Thomas algorithm (Sherman–Morrison around it for a closed yarn), each yarn iterated until its own
//! worst relative length error is below the tolerance (after at least one projection); or, for
//! comparisons that leave out that difference, every yarn until the worst of all is. Generic over
//! [`Real`], so it runs in f64 (the oracle) or f32 (the old CPU path, for comparison); inputs are the
//! f32 arrays of the scene, converted once.
#![allow(dead_code)]

use yarnsim::layout::{Edge, Yarn};
use yarnsim::math::{Real, V3};

/// What the projection did: per-point velocities `(x − q)/h` (for points of no yarn: the input
/// velocity), the largest iteration count and the largest final relative error over the yarns.
pub struct OracleResult<T: Real> {
    pub vel: Vec<V3<T>>,
    pub iterations: u32,
    pub max_error: f64,
}

/// The first yarn that did not reach the tolerance.
#[derive(Debug, PartialEq)]
pub struct OracleFailure {
    pub yarn: usize,
    pub iterations: u32,
    pub error: f64,
}

/// How the iterations stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Each yarn on its own, when its worst edge is within the tolerance (the old CPU path).
    PerYarn,
    /// Every yarn together, when the worst edge of all is (as `yarnsim::length` does).
    AllYarns,
}

/// One yarn's Fast Projection state.
struct YarnState<T: Real> {
    dir: Vec<V3<T>>,
    c: Vec<T>,
    d: Vec<T>,
    o: Vec<T>,
    r: Vec<T>,
    work: Vec<T>,
    z: Vec<T>,
}

/// The read-only inputs, in `T`.
struct Inputs<'a, T: Real> {
    edges: &'a [Edge],
    w: Vec<T>,
    q: Vec<V3<T>>,
}

impl<T: Real> YarnState<T> {
    fn new(ne: usize) -> Self {
        let zeros = vec![T::zero(); ne];
        YarnState {
            dir: vec![V3::zero(); ne],
            c: zeros.clone(),
            d: zeros.clone(),
            o: zeros.clone(),
            r: zeros.clone(),
            work: zeros.clone(),
            z: zeros,
        }
    }

    /// Directions and constraint values at `q + disp`; the worst relative error (NaN as ∞).
    fn evaluate(&mut self, y: &Yarn, inp: &Inputs<T>, disp: &[V3<T>]) -> T {
        let ye = &inp.edges[y.first_edge as usize..(y.first_edge + y.num_edges) as usize];
        let mut worst = T::zero();
        for (k, e) in ye.iter().enumerate() {
            let (a, b) = (e.a as usize, e.b as usize);
            let v = (inp.q[b] - inp.q[a]) + (disp[b] - disp[a]);
            let len = v.norm();
            let rest = T::from_f64(e.rest_length as f64);
            self.c[k] = len - rest;
            self.dir[k] = if len > T::zero() { v / len } else { v };
            let rel = (self.c[k] / rest).abs();
            if !rel.is_finite() {
                worst = T::from_f64(f64::INFINITY);
            } else if rel > worst {
                worst = rel;
            }
        }
        worst
    }

    /// One projection: assemble ∇C W ∇Cᵀ (edge k has ∇_a C = −t_k, ∇_b C = t_k; edges k and k+1
    /// share point b_k), solve, and x −= W ∇Cᵀ λ.
    fn project(&mut self, y: &Yarn, inp: &Inputs<T>, disp: &mut [V3<T>]) {
        let ye = &inp.edges[y.first_edge as usize..(y.first_edge + y.num_edges) as usize];
        let ne = ye.len();
        let closed = y.closed != 0;
        let w = &inp.w;
        for (k, e) in ye.iter().enumerate() {
            let (wa, wb) = (w[e.a as usize], w[e.b as usize]);
            if wa + wb > T::zero() {
                self.d[k] = wa + wb;
                self.r[k] = self.c[k];
            } else {
                self.d[k] = T::one();
                self.r[k] = T::zero();
            }
            let next = if k + 1 < ne {
                Some(k + 1)
            } else if closed {
                Some(0)
            } else {
                None
            };
            self.o[k] = match next {
                Some(n) => -(wb * self.dir[k].dot(self.dir[n])),
                None => T::zero(),
            };
        }
        if closed && ne >= 3 {
            cyclic_solve(&self.d, &self.o, &mut self.r, &mut self.work, &mut self.z);
        } else {
            thomas_solve(&self.d, &self.o, &mut self.r, &mut self.work);
        }
        for (k, e) in ye.iter().enumerate() {
            let (a, b) = (e.a as usize, e.b as usize);
            disp[a] += self.dir[k] * (w[a] * self.r[k]);
            disp[b] -= self.dir[k] * (w[b] * self.r[k]);
        }
    }
}

/// Fast Projection of every yarn's length constraints on `q + h v`, yarn after yarn, stopping as
/// `stop` says.
#[allow(clippy::too_many_arguments)]
pub fn length_projection<T: Real>(
    stop: Stop,
    h: f32,
    tolerance: f32,
    max_iterations: u32,
    yarns: &[Yarn],
    edges: &[Edge],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
) -> Result<OracleResult<T>, OracleFailure> {
    let h_t = T::from_f64(h as f64);
    let tol = T::from_f64(tolerance as f64);
    let inp = Inputs {
        edges,
        w: inv_mass.iter().map(|&m| T::from_f64(m as f64)).collect(),
        q: pos.iter().map(|&p| V3::<f32>::from4(p).cast()).collect(),
    };
    let mut disp: Vec<V3<T>> = vel
        .iter()
        .map(|&v| V3::<f32>::from4(v).cast::<T>() * h_t)
        .collect();
    let mut states: Vec<YarnState<T>> = yarns
        .iter()
        .map(|y| YarnState::new(y.num_edges as usize))
        .collect();
    let mut out = OracleResult {
        vel: Vec::new(),
        iterations: 0,
        max_error: 0.0,
    };
    match stop {
        Stop::PerYarn => {
            for (yi, (y, st)) in yarns.iter().zip(&mut states).enumerate() {
                let mut it = 0;
                let err = loop {
                    let err = st.evaluate(y, &inp, &disp);
                    // Always project at least once.
                    if err < tol && it > 0 {
                        break err;
                    }
                    if it == max_iterations {
                        return Err(OracleFailure {
                            yarn: yi,
                            iterations: it,
                            error: err.to_f64(),
                        });
                    }
                    it += 1;
                    st.project(y, &inp, &mut disp);
                };
                out.iterations = out.iterations.max(it);
                out.max_error = out.max_error.max(err.to_f64());
            }
        }
        Stop::AllYarns => {
            let mut it = 0;
            loop {
                let errs: Vec<T> = yarns
                    .iter()
                    .zip(&mut states)
                    .map(|(y, st)| st.evaluate(y, &inp, &disp))
                    .collect();
                let worst = errs.iter().fold(T::zero(), |a, &e| a.max(e));
                if worst < tol && it > 0 {
                    out.iterations = it;
                    out.max_error = worst.to_f64();
                    break;
                }
                if it == max_iterations {
                    let yi = errs.iter().position(|&e| e >= tol).unwrap_or(0);
                    return Err(OracleFailure {
                        yarn: yi,
                        iterations: it,
                        error: errs[yi].to_f64(),
                    });
                }
                it += 1;
                for (y, st) in yarns.iter().zip(&mut states) {
                    st.project(y, &inp, &mut disp);
                }
            }
        }
    }
    out.vel = disp.iter().map(|&d| d / h_t).collect();
    Ok(out)
}

/// Solves the symmetric tridiagonal system with diagonal `d` and off-diagonal `o` (`o[k]` couples rows
/// k and k+1; the last entry is ignored) in place on `r` (Thomas algorithm; `w` is scratch).
pub fn thomas_solve<T: Real>(d: &[T], o: &[T], r: &mut [T], w: &mut [T]) {
    let n = d.len();
    if n == 0 {
        return;
    }
    let mut beta = d[0];
    r[0] = r[0] / beta;
    for k in 1..n {
        w[k] = o[k - 1] / beta;
        beta = d[k] - o[k - 1] * w[k];
        r[k] = (r[k] - o[k - 1] * r[k - 1]) / beta;
    }
    for k in (0..n - 1).rev() {
        let t = w[k + 1] * r[k + 1];
        r[k] -= t;
    }
}

/// Solves the symmetric cyclic tridiagonal system (`o[n−1]` couples rows n−1 and 0) in place on `r`,
/// by Sherman–Morrison around two Thomas solves. `w`, `z` are scratch.
pub fn cyclic_solve<T: Real>(d: &[T], o: &[T], r: &mut [T], w: &mut [T], z: &mut [T]) {
    let n = d.len();
    let corner = o[n - 1];
    // A = A' + u vᵀ with u = (γ, 0…0, corner), v = (1, 0…0, corner/γ).
    let gamma = -d[0];
    let mut dd = d.to_vec();
    dd[0] = d[0] - gamma;
    dd[n - 1] = d[n - 1] - corner * corner / gamma;
    z.iter_mut().for_each(|x| *x = T::zero());
    z[0] = gamma;
    z[n - 1] = corner;
    thomas_solve(&dd, o, r, w);
    thomas_solve(&dd, o, z, w);
    let fact = (r[0] + corner * r[n - 1] / gamma) / (T::one() + z[0] + corner * z[n - 1] / gamma);
    for (rk, &zk) in r.iter_mut().zip(z.iter()) {
        *rk -= fact * zk;
    }
}

//! ACL's GPU state in a checkpoint: what an [`AclGpu`] keeps between steps, on the device (the
//! persistent buffers a rerun restores, the scheduler's, and the pools up to their lengths) and on
//! the host (the capacities, the counters of the last completed step, the pools' garbage, the
//! grid's anchor cell). A GPU run resumed from it continues bit for bit: the step reads nothing
//! else that an earlier step wrote (the reruns restore exactly these, and tests/gpu_acl_step.rs
//! checks that a rerun ends where a run without one does).
//!
//! Sections (`gpu.acl.` then): `caps` ([`AclCaps`]), `last` ([`AclStepCounters`]), `garbage`
//! (three u64: points, blocks, watched pairs), `anchor` (four i32), then each buffer's bytes under
//! its name. The buffers are saved whole, except those that hold a table or a list whose length
//! the last step's counters give ([`live_bytes`]: the set table and its springs, the released
//! boxes, the scheduler's entry table; since 2026-12-06, when a garment's checkpoint read back
//! their whole capacities) and the pools ([`POOLS`]), each up to its length: no step reads their
//! entries past it before writing them (tests/gpu_step.rs resumes with those poisoned). The paged pools
//! (`k_pool`, `watch_pool`, `watch_loc_pool`: [`PAGED_POOLS`]) are saved as flat pools whatever
//! their pages ([`crate::acl::pages`]), so that a run resumes on a device that pages them
//! otherwise.

use super::{AclCaps, AclGpu, AclGpuError, AclStepCounters, PAGED_POOLS, POOLS};
use crate::acl::rebuild::model_sizes;
use crate::acl::sets::ContactSet;
use crate::checkpoint::{CheckpointError, StateReader, StateWriter};
use crate::pipelines::{read_buffer, Buffers, Pipelines};
use crate::sched::gpu::SchedGpu;

const PREFIX: &str = "gpu.acl.";

/// ACL's own buffers saved whole. (`acl_sizes` and `pool_counters`, persistent too, are the last
/// step's counters with the capacities: [`AclGpu::import_state`] writes them from `last`, as a
/// growth does.)
const OWN: [&str; 4] = ["sets", "springs", "released", "rebuild_counts"];

fn section(name: &str) -> String {
    format!("{PREFIX}{name}")
}

/// The bytes of saved buffer `name` that hold the last step's table or list (`last`: its
/// counters), or `None` for a buffer saved whole: the set table and 4 springs a set, the released
/// boxes, the scheduler's entry table (its length the merged one, what `sched_state` holds for the
/// next step).
fn live_bytes(name: &str, last: &AclStepCounters) -> Option<u64> {
    use crate::acl::stiction::StictionSpring;
    use crate::layout::{Release, SchedEntry};
    let n = |count: u32, bytes: usize| count as u64 * bytes as u64;
    let sets = last.sizes.num_sets;
    match name {
        "sets" => Some(n(sets, size_of::<ContactSet>())),
        "springs" => Some(n(4 * sets, size_of::<StictionSpring>())),
        "released" => Some(n(last.sizes.released.count, size_of::<Release>())),
        "entries_a" => Some(n(last.sched.entries.count, size_of::<SchedEntry>())),
        _ => None,
    }
}

impl AclGpu {
    /// Every buffer saved in a checkpoint, with the bytes saved of it.
    fn saved_buffers(&self) -> Vec<(&'static str, &wgpu::Buffer, u64)> {
        let mut v = Vec::new();
        for name in OWN.into_iter().chain(SchedGpu::persistent_names()) {
            let b = self.buffer(name).expect("made in build");
            let bytes = live_bytes(name, &self.last).map_or(b.size(), |n| n.min(b.size()));
            v.push((name, b, bytes));
        }
        for (name, k, bytes) in POOLS {
            if PAGED_POOLS.contains(&name) {
                continue;
            }
            let b = self.own.get(name).expect("made in build");
            v.push((name, b, self.last.pools.len[k] as u64 * bytes as u64));
        }
        v
    }

    /// The flat image of paged pool `name`'s first entries, up to the pool's length
    /// ([`crate::acl::pages::PoolPages::flatten`]), the sets' ranges from `sets` (the table's
    /// bytes as saved).
    fn pool_image(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        name: &str,
        sets: &[u8],
    ) -> Result<Vec<u8>, AclGpuError> {
        let (_, k, elem, pages) = self
            .paged_pools()
            .into_iter()
            .find(|p| p.0 == name)
            .expect("a paged pool");
        let len = self.last.pools.len[k];
        let mut images = Vec::new();
        for (p, b) in self.page_buffers(name).iter().enumerate() {
            let bytes = pages.used(p, len) * elem as u64;
            images.push(if bytes == 0 {
                Vec::new()
            } else {
                read_buffer(device, queue, b, bytes)
                    .map_err(|e| AclGpuError::Gpu(format!("reading {name} back: {e}")))?
            });
        }
        let n = (self.last.sizes.num_sets as usize).min(sets.len() / size_of::<ContactSet>());
        let table: Vec<ContactSet> =
            bytemuck::pod_collect_to_vec(&sets[..n * size_of::<ContactSet>()]);
        let ranges = table.iter().map(|s| {
            let off = if k == 1 { s.k_off } else { s.w_off };
            (off, model_sizes(s)[k] as u32)
        });
        Ok(pages.flatten(&images, elem, len, ranges))
    }

    /// Writes the state the next step reads into `out` (downloading the device's part: waits for
    /// the GPU). Between batches only.
    pub fn export_state(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        out: &mut StateWriter,
    ) -> Result<(), AclGpuError> {
        out.put_value(&section("caps"), &self.caps);
        out.put_value(&section("last"), &self.last);
        let g = &self.garbage;
        out.put(&section("garbage"), &[g.cp as u64, g.k as u64, g.w as u64]);
        out.put_value(&section("anchor"), &self.sched.anchor());
        let mut sets = Vec::new();
        for (name, buffer, bytes) in self.saved_buffers() {
            let data = if bytes == 0 {
                Vec::new()
            } else {
                read_buffer(device, queue, buffer, bytes)
                    .map_err(|e| AclGpuError::Gpu(format!("reading {name} back: {e}")))?
            };
            // As words (every buffer holds 4-byte scalars): the packing gathers each byte of a
            // word into a plane, which shrinks small integers and float exponents.
            let words: Vec<u32> = bytemuck::pod_collect_to_vec(&data);
            out.put(&section(name), &words);
            if name == "sets" {
                sets = data;
            }
        }
        for name in PAGED_POOLS {
            let image = self.pool_image(device, queue, name, &sets)?;
            let words: Vec<u32> = bytemuck::pod_collect_to_vec(&image);
            out.put(&section(name), &words);
        }
        Ok(())
    }

    /// Continues the run whose state [`AclGpu::export_state`] wrote into `inp`: this driver, made
    /// for the same scene, takes its capacities (at least; not its budgets), its counters and
    /// garbage, its anchor cell and the contents of its buffers. On error the driver must be
    /// discarded.
    pub fn import_state(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        inp: &StateReader,
    ) -> Result<(), AclGpuError> {
        let saved: AclCaps = inp.get_value(&section("caps"))?;
        let last: AclStepCounters = inp.get_value(&section("last"))?;
        let garbage = inp.get_len::<u64>(&section("garbage"), 3)?;
        let anchor = inp.get_value::<[i32; 4]>(&section("anchor"))?;
        if anchor[..3].iter().any(|a| a.unsigned_abs() > 100_000_000) || anchor[3] != 0 {
            return Err(CheckpointError::bad(
                &section("anchor"),
                format!("anchor cell {anchor:?} beyond ±10^8"),
            )
            .into());
        }
        self.last = last;
        let [cp, k, w] = [garbage[0], garbage[1], garbage[2]].map(|n| n as usize);
        self.garbage = super::PoolGarbage { cp, k, w };
        self.peak = self.peak.at_least(&AclCaps::counted(&last));
        self.sched.set_anchor(anchor);
        // The buffers as a growth to the saved capacities makes them (the counters from `last`;
        // each capacity at least this driver's, so none is 0). The budgets are this driver's:
        // they change how a step is recorded, never its result, and the run's cuts start afresh.
        let mut caps = self.caps.at_least(&saved);
        (caps.rounds, caps.coalesce, caps.newcomers) =
            (self.caps.rounds, self.caps.coalesce, self.caps.newcomers);
        (caps.merge.rounds, caps.merge.passes, caps.merge.indexed) = (
            self.caps.merge.rounds,
            self.caps.merge.passes,
            self.caps.merge.indexed,
        );
        let pool_caps = [caps.points, caps.blocks, caps.watch, caps.terms];
        if let Some(k) = (0..3).find(|&k| last.pools.len[k] > pool_caps[k]) {
            return Err(CheckpointError::bad(
                &section("last"),
                format!(
                    "pool {k} holds {} entries, past its capacity {}",
                    last.pools.len[k], pool_caps[k]
                ),
            )
            .into());
        }
        self.grow(device, queue, pipelines, shared, caps)?;
        let mut tails = Vec::new();
        for (name, buffer, bytes) in self.saved_buffers() {
            let s = section(name);
            let data = inp.bytes(&s)?;
            // A pool's saved entries are its length's; any other buffer fits the capacities.
            let pool = POOLS.iter().any(|p| p.0 == name);
            let n = data.len() as u64;
            if n > buffer.size() || !n.is_multiple_of(4) || (pool && n != bytes) {
                return Err(CheckpointError::bad(
                    &s,
                    format!(
                        "{} bytes for a buffer of {} (capacities {caps:?})",
                        data.len(),
                        buffer.size()
                    ),
                )
                .into());
            }
            if !data.is_empty() {
                queue.write_buffer(buffer, 0, &data);
            }
            // A table or list saved up to its length: the rest poisoned as a restore's pools
            // are (tests), once the loop lets go of the buffers.
            if live_bytes(name, &last).is_some() {
                tails.push((buffer.clone(), n));
            }
        }
        if self.poison_after_restore {
            for (b, from) in tails {
                self.poison_tail(queue, &b, from);
            }
        }
        for (name, k, elem, pages) in self.paged_pools() {
            let s = section(name);
            let data = inp.bytes(&s)?;
            if data.len() as u64 != last.pools.len[k] as u64 * elem as u64 {
                return Err(CheckpointError::bad(
                    &s,
                    format!(
                        "{} bytes for a pool of {} entries of {elem} bytes",
                        data.len(),
                        last.pools.len[k]
                    ),
                )
                .into());
            }
            for (page, b) in pages.split(&data, elem).iter().zip(self.page_buffers(name)) {
                if !page.is_empty() {
                    queue.write_buffer(&b, 0, page);
                }
            }
        }
        Ok(())
    }
}

//! A small deterministic random generator (xorshift64*) for the tests, so that they need no extra
//! crate and a seed names the same sequence on every machine. Test files add their own samplers
//! (unit vectors, matrices) as further `impl Rng` blocks.
#![allow(dead_code)]

pub struct Rng(pub u64);

impl Rng {
    /// Uniform in [0, 1), from the top 53 bits of the scrambled state.
    pub fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [a, b).
    pub fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.next_f64()
    }

    /// 64 scrambled bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Damage of a checkpoint that its checksum would not catch: one to three bytes of `b`, each at
    /// the index `at` draws, set to 0xFF, 0 or a random value.
    pub fn damage(&mut self, b: &mut [u8], mut at: impl FnMut(&mut Rng) -> usize) {
        for _ in 0..1 + self.next_u64() % 3 {
            let i = at(self);
            b[i] = match self.next_u64() % 3 {
                0 => 0xFF,
                1 => 0,
                _ => self.next_u64() as u8,
            };
        }
    }
}

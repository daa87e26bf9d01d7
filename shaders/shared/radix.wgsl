// radix: the digit of a sort record (src/sort.rs `digit`), shared by sort_histogram and
// sort_scatter.

// The 8-bit digit of the 64-bit key key_hi:key_lo at bit `shift` (a multiple of 8, below 64).
fn sort_digit(kv: KeyValue, shift: u32) -> u32 {
    if shift < 32u {
        return (kv.key_lo >> shift) & 255u;
    }
    return (kv.key_hi >> (shift - 32u)) & 255u;
}

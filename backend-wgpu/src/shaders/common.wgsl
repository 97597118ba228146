// Helpers shared by the extension-field kernels: the twiddle table read as
// powers of a root of unity, and flattened extension columns.

// w_(2^log_n)^i from the table of w_(2^tw_log)^j, j < 2^(tw_log - 1).
fn root_pow(log_n: u32, i_in: u32) -> vec2<u32> {
    if (log_n == 0u) {
        return f_one();
    }
    let half = 1u << (log_n - 1u);
    let i = i_in & ((half << 1u) - 1u);
    if (i < half) {
        return tw[i << (pc.tw_log - log_n)];
    }
    return f_neg(tw[(i - half) << (pc.tw_log - log_n)]);
}

// The single-threaded probe behind RESULTS 42's per-transform times:
// appended to backend-cpu/src/ntt.rs (it uses the module's private
// functions), run with
// RUSTFLAGS="-C target-cpu=native" cargo test --release -p backend-cpu --lib phase_probe -- --ignored --nocapture
#[cfg(test)]
mod phase_probe {
    use super::*;
    #[test]
    #[ignore]
    fn phase_probe() {
        let tw = Twiddles::default();
        let (fwd, inv) = (tw.get(false), tw.get(true));
        for log_n in [16u32, 18, 20] {
            let n = 1usize << log_n;
            let src: Vec<F> = (0..n as u64).map(|i| F::new(i.wrapping_mul(0x9E3779B97F4A7C15) % P)).collect();
            let scale = bitrev_powers(F::new(7), inv_pow2(log_n), n);
            let mut dst = vec![F::ZERO; 2 * n];
            let mut best = [f64::MAX; 4];
            for _ in 0..15 {
                let t = std::time::Instant::now();
                dif(&mut dst[..n], Some(&src), &inv, false);
                best[0] = best[0].min(t.elapsed().as_secs_f64() * 1e3);
                let t = std::time::Instant::now();
                dit_spread(&mut dst[..n], 1, Some(&scale), &fwd, false);
                best[1] = best[1].min(t.elapsed().as_secs_f64() * 1e3);
                dst[..n].copy_from_slice(&src);
                let t = std::time::Instant::now();
                dit_spread(&mut dst, 2, Some(&scale), &fwd, false);
                best[2] = best[2].min(t.elapsed().as_secs_f64() * 1e3);
                let t = std::time::Instant::now();
                dif(&mut dst[..n], None, &fwd, false);
                best[3] = best[3].min(t.elapsed().as_secs_f64() * 1e3);
            }
            println!("2^{log_n}: dif-inv-oop {:.3} ms, dit n {:.3} ms, dit_spread 2n {:.3} ms, dif in place {:.3} ms", best[0], best[1], best[2], best[3]);
        }
    }
}
// Output on the development machine (2 cores, AMD EPYC, AVX-512):
// 2^16: dif-inv-oop 0.366 ms, dit n 0.378 ms, dit_spread 2n 0.816 ms, dif in place 0.351 ms
// 2^18: dif-inv-oop 1.819 ms, dit n 1.782 ms, dit_spread 2n 3.977 ms, dif in place 1.678 ms
// 2^20: dif-inv-oop 8.442 ms, dit n 8.382 ms, dit_spread 2n 18.437 ms, dif in place 8.034 ms

//! Per-stage times of the wgpu backend against the CUDA backend on the
//! same card (in a `--features cuda,wgpu` build; wgpu alone otherwise), in
//! one process, alternating A B B A, best of the repeats. Every time is
//! wall time to a synchronized device, inputs random and already resident.
//!
//! cargo run --release -p benches --features cuda,wgpu --example gpu_stages -- [LOG_ROWS] [COLUMNS] [REPEATS]
//! (defaults: 2^20 rows, 64 columns, 3)

use backend_api::{
    Backend, ComposeInputs, Coset, Ctx, DeepColumns, DeepPoint, Ext, HashKind, LogUpInputs, F, GENERATOR,
};
use benches::{ms, random_matrix};
use stark::examples::{Cubic, Permutation};
use stark::{Air, Machine};
use std::collections::BTreeMap;
use std::time::Instant;

type Times = BTreeMap<String, f64>;

fn ext(k: u64) -> Ext {
    Ext::new(F::new(3 * k + 1), F::new(5 * k + 2), F::new(7 * k + 3))
}

/// Runs `f`, waits for the device, keeps the best time under `name`.
fn time<T>(t: &mut Times, name: &str, sync: &dyn Fn(), f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let v = f();
    sync();
    let d = ms(t0.elapsed());
    let e = t.entry(name.to_string()).or_insert(f64::INFINITY);
    *e = e.min(d);
    v
}

/// One pass over every stage on `b`.
fn stages<B: Backend>(b: &B, sync: &dyn Fn(), log_n: u32, width: usize, t: &mut Times) -> Result<(), String> {
    let ctx = Ctx::table("bench");
    let e = |e: backend_api::BackendError| e.to_string();
    let host = random_matrix(log_n, width, 1);
    let m = time(t, "upload", sync, || b.upload(&ctx, &host)).map_err(e)?;
    time(t, "download", sync, || b.download(&ctx, &m)).map_err(e)?;
    // The main round's first call: the trace's transfer and its extension.
    time(t, "upload+coset_lde x4", sync, || b.upload_coset_lde(&ctx, &host, 2, GENERATOR)).map_err(e)?;
    // A round trip: what each root, opening and grinding batch waits for.
    let tiny = b.upload(&ctx, &random_matrix(2, 1, 3)).map_err(e)?;
    sync();
    time(t, "download 4 words", sync, || b.download(&ctx, &tiny)).map_err(e)?;
    time(t, "ntt", sync, || b.ntt(&ctx, &m)).map_err(e)?;
    time(t, "intt", sync, || b.intt(&ctx, &m)).map_err(e)?;
    for lb in [1u32, 2, 3] {
        time(t, &format!("coset_lde x{}", 1 << lb), sync, || b.coset_lde(&ctx, &m, lb, GENERATOR)).map_err(e)?;
    }
    let lde = b.coset_lde(&ctx, &m, 1, GENERATOR).map_err(e)?;
    time(t, "stride_rows /2", sync, || b.stride_rows(&ctx, &lde, 0, 1)).map_err(e)?;
    for h in HashKind::ALL {
        time(t, &format!("merkle {} x2", h.name()), sync, || b.commit(&ctx, &lde, h)).map_err(e)?;
    }
    let log_big = log_n + 1;
    let dom = Coset::new(log_big, GENERATOR);
    // The degree-3 AIR of DESIGN.md's peer comparison, on the blowup-2 LDE.
    let cubic = Cubic::new(width);
    let cs = Air::constraints(&cubic);
    let publics: Vec<F> = (0..cs.layout.num_public as u64).map(|i| F::new(i + 9)).collect();
    let inputs = ComposeInputs {
        constraints: cs,
        fixed: None,
        main: &lde,
        aux: None,
        log_trace_height: log_n,
        domain: dom,
        challenges: &[],
        publics: &publics,
        aux_values: &[],
        alpha: ext(1),
        next: None,
        log_stride: 0,
    };
    let q = time(t, "compose cubic", sync, || b.compose(&ctx, &inputs)).map_err(e)?;
    // Two parts fill the blowup-2 domain: no degree check, every part evaluated.
    time(t, "split_quotient 2", sync, || b.split_quotient(&ctx, &q, dom, log_n, 2, dom.log_size)).map_err(e)?;
    let perm = Permutation::default();
    let logup = perm.tables()[0].logup().ok_or("the permutation table has a bus")?;
    let pm = b.upload(&ctx, &random_matrix(log_n, logup.eval.layout.main_width, 2)).map_err(e)?;
    let li = LogUpInputs { logup, main: &pm, fixed: None, z: ext(2), alpha: ext(3) };
    time(t, "logup", sync, || b.logup_aux(&ctx, &li)).map_err(e)?;
    let pts = [ext(4), ext(5)];
    time(t, "evaluate_at 2 pts", sync, || b.evaluate_at(&ctx, &lde, dom, 0, &pts)).map_err(e)?;
    let coeffs: Vec<Ext> = (0..width as u64).map(ext).collect();
    let point = DeepPoint {
        point: ext(6),
        columns: vec![DeepColumns { matrix: &lde, coeffs: coeffs.clone(), values: coeffs.clone() }],
    };
    let deep = time(t, "deep 1 pt", sync, || b.deep_quotient(&ctx, dom, std::slice::from_ref(&point))).map_err(e)?;
    time(t, "fri_fold x4", sync, || b.fri_fold(&ctx, &deep, dom, 2, ext(7), None)).map_err(e)?;
    for h in HashKind::ALL {
        time(t, &format!("grind 20 {}", h.name()), sync, || b.grind(&ctx, h, &[7u8; 32], 20)).map_err(e)?;
    }
    Ok(())
}

fn main() -> Result<(), String> {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let arg = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let (log_n, width, reps) = (arg(0, 20) as u32, arg(1, 64), arg(2, 3));
    let w = backend_wgpu::WgpuBackend::new().map_err(|e| e.to_string())?;
    let a = w.adapter();
    println!("wgpu: {} ({}, {}), field on 64-bit integers: {}", a.name, a.api, a.driver, w.uses_int64());
    let wsync = || w.synchronize().expect("wgpu synchronize");
    let mut tw = Times::new();
    #[cfg(feature = "cuda")]
    {
        let c = backend_cuda::CudaBackend::new(0).map_err(|e| e.to_string())?;
        let csync = || c.synchronize().expect("cuda synchronize");
        let mut tc = Times::new();
        // Warm-up: kernels, twiddles, pools.
        stages(&c, &csync, log_n, width, &mut Times::new())?;
        stages(&w, &wsync, log_n, width, &mut Times::new())?;
        for _ in 0..reps {
            stages(&c, &csync, log_n, width, &mut tc)?;
            stages(&w, &wsync, log_n, width, &mut tw)?;
            stages(&w, &wsync, log_n, width, &mut tw)?;
            stages(&c, &csync, log_n, width, &mut tc)?;
        }
        println!("2^{log_n} x {width}, best of {} (A B B A)", 2 * reps);
        println!("{:<20} {:>10} {:>10} {:>8}", "stage", "cuda ms", "wgpu ms", "ratio");
        for (k, wv) in &tw {
            let cv = tc.get(k).copied().unwrap_or(f64::NAN);
            println!("{k:<20} {cv:>10.2} {wv:>10.2} {:>7.2}x", wv / cv);
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        stages(&w, &wsync, log_n, width, &mut Times::new())?;
        for _ in 0..reps {
            stages(&w, &wsync, log_n, width, &mut tw)?;
        }
        println!("2^{log_n} x {width}, best of {reps}");
        for (k, v) in &tw {
            println!("{k:<20} {v:>10.2} ms");
        }
    }
    Ok(())
}

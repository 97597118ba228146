//! Compiles every kernel (and generated composition and LogUp kernels) to PTX with
//! NVRTC for sm_80, sm_90 and sm_120. Needs no GPU, only libnvrtc (CI
//! installs PyPI's `nvidia-cuda-nvrtc` and points LD_LIBRARY_PATH at it).
//! Skips with a message when NVRTC is absent; fails on any error or
//! warning. Also pins that `precompile` fills the kernel cache `prepare`
//! reads.

use backend_api::{ConstraintBuilder, Expr, Interaction, Layout, LogUp};
use backend_cuda::nvrtc::{self, Target};

const ARCHS: [(u32, u32); 3] = [(8, 0), (9, 0), (12, 0)];

fn sample_constraints() -> backend_api::ConstraintSystem {
    let layout =
        Layout { fixed_width: 1, main_width: 3, aux_width: 1, num_challenges: 2, num_public: 1, num_aux_values: 1 };
    let mut b = ConstraintBuilder::new(layout);
    let a = Expr::main(0, 0);
    b.when_transition(Expr::main(0, 1) - &a * &a * Expr::fixed(0, 0));
    b.when_first_row(Expr::main(1, 0) - Expr::public(0));
    b.when_last_row(Expr::aux(0, 0) - Expr::aux_value(0));
    b.always(Expr::aux(0, 1) * Expr::challenge(0) - Expr::main(2, 0) - Expr::challenge(1));
    b.build().expect("valid constraints")
}

fn sample_logup() -> LogUp {
    let layout = Layout { fixed_width: 1, main_width: 3, num_challenges: 2, ..Layout::default() };
    let its = vec![
        Interaction { tag: 1, values: vec![Expr::main(0, 0), Expr::fixed(0, 1)], mult: -Expr::main(1, 0) },
        Interaction { tag: 2, values: vec![], mult: Expr::main(2, 1) * Expr::main(0, 0) },
    ];
    LogUp::new(layout, its, 0, 1).expect("valid interactions")
}

/// Whether NVRTC is here; without it a test skips, unless CI asked for it.
fn nvrtc_or_skip() -> bool {
    if nvrtc::nvrtc_present() {
        return true;
    }
    assert!(std::env::var_os("KILN_REQUIRE_NVRTC").is_none(), "KILN_REQUIRE_NVRTC is set but libnvrtc is missing");
    println!("SKIPPED: libnvrtc not found (install nvidia-cuda-nvrtc and set LD_LIBRARY_PATH)");
    false
}

#[test]
fn every_kernel_compiles_to_ptx_without_warnings() {
    if !nvrtc_or_skip() {
        return;
    }
    let version = nvrtc::version().expect("nvrtc version");
    let mut sources: Vec<(String, String)> =
        kernels_cuda::MODULES.iter().map(|m| (m.name.to_string(), m.source())).collect();
    for (p, src) in backend_cuda::compose_sources(&sample_constraints()).into_iter().enumerate() {
        sources.push((format!("compose-{p}"), src));
    }
    // A system large enough to be split: its later parts add to the first.
    let cubic = stark::examples::Cubic::new(64);
    let parts = backend_cuda::compose_sources(stark::Air::constraints(&cubic));
    assert!(parts.len() > 1);
    sources.extend(parts.into_iter().enumerate().map(|(p, src)| (format!("compose-cubic-{p}"), src)));
    sources.push(("logup-generated".into(), backend_cuda::logup_source(&sample_logup())));
    let mut failures = Vec::new();
    for (ma, mi) in ARCHS {
        for (name, src) in &sources {
            match nvrtc::compile_uncached(name, src, Target::Ptx(ma, mi)) {
                Ok(c) => {
                    let ptx = String::from_utf8_lossy(&c.image);
                    if !c.log.is_empty() {
                        failures.push(format!("{name} sm_{ma}{mi}: NVRTC log not empty:\n{}", c.log));
                    }
                    if let Some(m) = kernels_cuda::MODULES.iter().find(|m| m.name == name) {
                        for k in m.kernels {
                            if !ptx.contains(&format!(".entry {k}(")) {
                                failures.push(format!("{name} sm_{ma}{mi}: no entry {k} in the PTX"));
                            }
                        }
                    }
                    println!(
                        "{name} compute_{ma}{mi}: {} bytes of PTX (NVRTC {}.{})",
                        c.image.len(),
                        version.0,
                        version.1
                    );
                }
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `precompile` (no device) fills the disk cache with exactly the entries
/// `prepare` looks up: one per generated kernel, under the key of its
/// source and target.
#[test]
fn precompile_fills_the_cache_prepare_reads() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("kiln-precompile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The only test of this binary that reads the cache directory.
    std::env::set_var("KILN_CACHE_DIR", &dir);
    let cubic = stark::examples::Cubic::new(64);
    let (cs, small, logup) = (stark::Air::constraints(&cubic), sample_constraints(), sample_logup());
    let tables = [(cs, None), (&small, Some(&logup))];
    backend_cuda::CudaBackend::precompile(&tables, (9, 0), &backend_cuda::CudaConfig::default()).unwrap();
    let mut want: Vec<String> = backend_cuda::compose_sources(cs)
        .iter()
        .chain(&backend_cuda::compose_sources(&small))
        .map(|src| format!("compose-{}.bin", nvrtc::cache_key(src, Target::Cubin(9, 0)).unwrap()))
        .collect();
    let logup_src = backend_cuda::logup_source(&logup);
    want.push(format!("logup-generated-{}.bin", nvrtc::cache_key(&logup_src, Target::Cubin(9, 0)).unwrap()));
    want.sort();
    want.dedup();
    let mut got: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    got.sort();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(got, want);
}

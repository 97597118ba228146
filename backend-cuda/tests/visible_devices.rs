//! Device choice is by ordinal, through the API, and does not depend on
//! `CUDA_VISIBLE_DEVICES` being read at some static initialisation (seed
//! 004: a variable set after the driver started changed nothing, and
//! workers meant for two cards shared one). This test changes the variable
//! inside the process and shows that a backend made afterwards still runs
//! on the card its ordinal names (by UUID), and that the device list did
//! not change. Its own test binary: it changes the process environment.
//! Without a CUDA device it prints that it was skipped and passes.

use backend_api::{BackendBase, ColMatrix, Ctx, NttOps, F};
use backend_cpu::CpuBackend;
use backend_cuda::{probe, CudaBackend, DeviceSpec};

#[test]
fn the_ordinal_given_is_the_card_used_whatever_the_environment_says() {
    let before = match probe() {
        Ok(d) if !d.is_empty() => d,
        other => {
            println!("SKIPPED: no CUDA device ({other:?})");
            return;
        }
    };
    let last = before.len() - 1;
    let first = CudaBackend::new(last).expect("open the last device");
    assert_eq!(first.device().uuid, before[last].uuid);
    // Hide every device but 0 (or, with one device, all of them). The
    // driver read the variable when it started: nothing may change.
    let hide = if last > 0 { "0" } else { "none" };
    std::env::set_var("CUDA_VISIBLE_DEVICES", hide);
    let again = CudaBackend::new(last).expect("the same ordinal after the variable changed");
    assert_eq!(again.device().uuid, before[last].uuid, "ordinal {last} now names another card");
    assert_eq!(probe().expect("probe"), before, "the device list changed with the variable");
    assert_eq!(DeviceSpec::All.resolve(probe().unwrap().len()).unwrap(), (0..before.len()).collect::<Vec<_>>());
    // Distinct ordinals are distinct cards.
    let uuids: std::collections::BTreeSet<&str> = before.iter().map(|d| d.uuid.as_str()).collect();
    assert_eq!(uuids.len(), before.len(), "two ordinals name one card: {before:?}");
    // And it computes there: an NTT equals the CPU's.
    let ctx = Ctx::table("visible");
    let m = ColMatrix::new(1, 1 << 10, (0..1u64 << 10).map(|i| F::new(i * i + 1)).collect());
    let cpu = CpuBackend::new();
    let want = cpu.download(&ctx, &cpu.ntt(&ctx, &cpu.upload(&ctx, &m).unwrap()).unwrap()).unwrap();
    let got = again.download(&ctx, &again.ntt(&ctx, &again.upload(&ctx, &m).unwrap()).unwrap()).unwrap();
    assert_eq!(got, want);
    println!("ordinal {last} is {} before and after CUDA_VISIBLE_DEVICES={hide}", before[last].uuid);
}

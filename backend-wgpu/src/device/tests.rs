//! Tests of the device layer: buffer and staging reuse, clears, and kernel compilation.

use super::*;

/// A kernel storing `v` at every word of its output.
fn store(v: u32) -> String {
    format!(
        "struct Pc {{ n: u32 }}\nvar<push_constant> pc: Pc;\n\
         @group(0) @binding(0) var<storage, read_write> out: array<u32>;\n\
         @compute @workgroup_size(64)\n\
         fn main(@builtin(global_invocation_id) id: vec3<u32>) {{\n    if (id.x < pc.n) {{ out[id.x] = {v}u; }}\n}}\n"
    )
}

#[test]
fn reads_span_buffers_and_pieces_and_reuse_their_staging() {
    // 256-byte bindings: read-backs go in pieces of 32 words, cut
    // inside parts and across buffers, several in flight.
    let settings =
        Settings { adapter: 0, max_binding_bytes: Some(256), memory_budget_bytes: None, int64: false, tile_log: None };
    let Some(dev) = test_device_with(settings) else { return };
    let ctx = Ctx::table("read");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut words = |n: usize| -> Vec<u64> {
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x ^ (x >> 29)
            })
            .collect()
    };
    let data = [words(32), words(32), words(20)];
    let bufs: Vec<DeviceBuffer> = data.iter().map(|d| dev.upload(Stage::Download, &ctx, d).unwrap()).collect();
    let parts: [(&wgpu::Buffer, u64, u64); 4] =
        [(&bufs[0], 3, 29), (&bufs[1], 0, 32), (&bufs[2], 5, 15), (&bufs[0], 0, 1)];
    let want: Vec<u64> = parts
        .iter()
        .flat_map(|&(b, off, len)| {
            let i = bufs.iter().position(|x| **x == *b).unwrap();
            data[i][off as usize..(off + len) as usize].to_vec()
        })
        .collect();
    for _ in 0..2 {
        assert_eq!(dev.read(Stage::Download, &ctx, &parts).unwrap(), want);
        assert_eq!(dev.read(Stage::Download, &ctx, &[(&bufs[2], 19, 1)]).unwrap(), vec![data[2][19]]);
    }
    let idle = dev.staging.idle_sizes();
    assert!(!idle.is_empty() && idle.len() <= 3, "staging buffers are kept and reused, not one per read");
    let mut short = vec![0u64; 3];
    assert!(dev.read_into(Stage::Download, &ctx, &parts, &mut short).is_err(), "a wrong-sized destination is an error");
}

#[test]
fn a_freed_buffer_is_reused_zeroed_and_the_pool_keeps_its_cap() {
    let Some(dev) = own_device(7) else { return };
    let ctx = Ctx::table("pool");
    let data: Vec<u64> = (1..=100).map(|i| i * 0x0101_0101_0101).collect();
    let first = dev.upload(Stage::Ntt, &ctx, &data).unwrap();
    let id = (*first).clone();
    drop(first);
    assert_eq!(dev.buffers.idle_sizes(), vec![800]);
    let again = dev.alloc(Stage::Ntt, &ctx, 800).unwrap();
    assert!(*again == id, "the freed buffer of that size is reused");
    assert!(dev.read(Stage::Ntt, &ctx, &[(&again, 0, 100)]).unwrap().iter().all(|&w| w == 0));
    let other = dev.alloc(Stage::Ntt, &ctx, 808).unwrap();
    assert!(*other != id, "another size is a new buffer");
    // Dropped while a job records, a buffer waits for that job.
    let job = dev.job(Stage::Ntt, &ctx);
    drop(dev.alloc(Stage::Ntt, &ctx, 96).unwrap());
    assert!(dev.buffers.idle_sizes().is_empty(), "a job open at the drop may still record a use");
    job.submit().unwrap();
    assert_eq!(dev.buffers.idle_sizes(), vec![96]);
    // Past the cap the oldest idle buffers go.
    let pool = Arc::new(BufferPool::new(2000));
    for b in [again, other] {
        pool.give(b.buf.clone().unwrap());
    }
    pool.give(dev.alloc(Stage::Ntt, &ctx, 1000).unwrap().buf.clone().unwrap());
    assert_eq!(pool.idle_sizes(), vec![808, 1000]);
    assert!(pool.release() && pool.idle_sizes().is_empty());
}

#[test]
fn large_writes_go_through_reused_staging() {
    let Some(dev) = own_device(5) else { return };
    let ctx = Ctx::table("write");
    let n = 3 * STAGED_WRITE_MIN / 16;
    for round in 0..3u64 {
        let data: Vec<u64> = (0..n as u64).map(|i| (i ^ round).wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let buf = dev.upload(Stage::Upload, &ctx, &data).unwrap();
        assert_eq!(dev.read(Stage::Upload, &ctx, &[(&buf, 0, n as u64)]).unwrap(), data, "round {round}");
    }
    // Each write found the last one's staging mapped again.
    dev.device.poll(wgpu::PollType::Wait).unwrap();
    let st = dev.upload_staging.state();
    assert_eq!(st.idle.len() + st.busy.len(), 1, "upload staging is kept and reused");
}

#[test]
fn a_reused_buffer_is_cleared_before_work_any_thread_submits_later() {
    // Threads allocate zeroed buffers of one size (so they come back
    // from the pool, cleared with a later submission), fill them and
    // read them back, while each also submits and uploads: a clear may
    // never reach the queue after the work that filled its buffer.
    let Some(dev) = own_device(6) else { return };
    let ctx = Ctx::table("clears");
    let ks: Vec<Arc<Kernel>> =
        (1..=4u32).map(|v| dev.kernel(Stage::Compose, &ctx, "test", &store(v), &[true]).unwrap()).collect();
    std::thread::scope(|s| {
        for (t, k) in ks.iter().enumerate() {
            let (dev, ctx) = (&dev, &ctx);
            s.spawn(move || {
                for round in 0..200 {
                    let buf = dev.alloc(Stage::Compose, ctx, 4 * 256).unwrap();
                    let mut job = dev.job(Stage::Compose, ctx);
                    job.dispatch(k, &[&buf], &[256], (4, 1, 1)).unwrap();
                    job.submit().unwrap();
                    drop(dev.upload(Stage::Compose, ctx, &[round; 4]).unwrap());
                    let words = dev.read(Stage::Compose, ctx, &[(&buf, 0, 128)]).unwrap();
                    let v = t as u64 + 1;
                    assert!(words.iter().all(|&w| w == v | v << 32), "thread {t} round {round}: {words:?}");
                }
            });
        }
    });
}

#[test]
fn a_batch_compiles_each_source_once_and_a_bad_one_is_a_typed_error() {
    let Some(dev) = test_device(false) else { return };
    let ctx = Ctx::table("batch");
    let (a, b) = (store(7), store(9));
    // A source twice in one batch is compiled once; each kernel runs as its own.
    let ks = dev.kernels(Stage::Compose, &ctx, "test", &[&a, &b, &a], &[true]).unwrap();
    assert!(Arc::ptr_eq(&ks[0], &ks[2]) && !Arc::ptr_eq(&ks[0], &ks[1]));
    let again = dev.kernel(Stage::Compose, &ctx, "test", &b, &[true]).unwrap();
    assert!(Arc::ptr_eq(&again, &ks[1]), "a compiled kernel comes from the cache");
    for (k, want) in [(&ks[0], 7u64), (&ks[1], 9)] {
        let out = dev.alloc(Stage::Compose, &ctx, 8 * 64).unwrap();
        let mut job = dev.job(Stage::Compose, &ctx);
        job.dispatch(k, &[&out], &[128], (2, 1, 1)).unwrap();
        job.submit().unwrap();
        let words = dev.read(Stage::Compose, &ctx, &[(&out, 0, 64)]).unwrap();
        assert!(words.iter().all(|&w| w == want | (want << 32)), "kernel storing {want}");
    }
    // A batch with a source that does not compile fails as a whole,
    // typed, also when it compiles on a thread of its own.
    let (good, bad) = (store(11), a.replace("out[id.x] = 7u;", "out[id.x] = undefined_name;"));
    match dev.kernels(Stage::Compose, &ctx, "test", &[&good, &bad], &[true]) {
        Err(BackendError::Device { stage: Stage::Compose, message, .. }) => {
            assert!(message.contains("does not compile"), "{message}")
        }
        other => panic!("expected a typed compile error, got {:?}", other.map(|v| v.len())),
    }
}

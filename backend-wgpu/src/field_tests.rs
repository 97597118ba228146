//! The WGSL field library against `backend_api`'s field and extension on
//! random values and the edge values of both limbs, with both product
//! variants (32-bit halves, and 64-bit integers where the adapter has
//! them). Skipped, with a note, where there is no adapter.

use crate::device::{groups_for, test_device};
use crate::shader;
use backend_api::field::P;
use backend_api::{Ctx, Ext, Stage, F};
use rand::{Rng, SeedableRng};

const BODY: &str = "struct Pc { n: u32 }
var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> a: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let i = wid.x * 256u + tid;
    if (i >= pc.n) {
        return;
    }
    let j = (i + 1u) % pc.n;
    let o = 11u * i;
    out[o] = f_add(a[i], b[i]);
    out[o + 1u] = f_sub(a[i], b[i]);
    out[o + 2u] = f_mul(a[i], b[i]);
    out[o + 3u] = f_inv(a[i]);
    out[o + 4u] = f_neg(a[i]);
    let x = E3(a[i], b[i], a[j]);
    let p = e_mul(x, E3(b[i], a[i], b[j]));
    out[o + 5u] = p.a;
    out[o + 6u] = p.b;
    out[o + 7u] = p.c;
    let q = e_inv(x);
    out[o + 8u] = q.a;
    out[o + 9u] = q.b;
    out[o + 10u] = q.c;
}
";

fn values(n: usize, seed: u64) -> Vec<u64> {
    let edges = [0, 1, 2, P - 1, P - 2, 0xFFFF_FFFF, 1 << 32, (1 << 32) + 1, 1 << 63, P >> 1, 0xFFFF, 0x1_0000];
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut v: Vec<u64> = edges.to_vec();
    for &x in &edges {
        v.extend(edges.iter().map(|&y| x ^ (y & 0xFFFF_FFFF)).filter(|&z| z < P));
    }
    while v.len() < n {
        v.push(r.gen_range(0..P));
    }
    v.truncate(n);
    v
}

fn expected(a: &[u64], b: &[u64]) -> Vec<u64> {
    let n = a.len();
    let f = |x: u64| F::new(x);
    let mut out = Vec::with_capacity(11 * n);
    for i in 0..n {
        let j = (i + 1) % n;
        let (x, y) = (f(a[i]), f(b[i]));
        out.extend([x + y, x - y, x * y, x.inverse().unwrap_or(F::ZERO), -x].map(F::value));
        let e = Ext::new(x, y, f(a[j]));
        out.extend((e * Ext::new(y, x, f(b[j]))).0.map(F::value));
        out.extend(e.inverse().unwrap_or(Ext::ZERO).0.map(F::value));
    }
    out
}

#[test]
fn wgsl_field_matches_the_host_field_with_both_products() {
    for int64 in [false, true] {
        let Some(dev) = test_device(int64) else { return };
        if int64 && !dev.int64 {
            eprintln!("adapter has no SHADER_INT64: 64-bit products not checked");
            continue;
        }
        let ctx = Ctx::table("field");
        let n = 4096;
        let a = values(n, 1);
        let mut b = values(n, 2);
        b.rotate_left(7);
        let k =
            dev.kernel(Stage::Ntt, &ctx, "field", &shader::kernel(dev.int64, BODY, 1), &[false, false, true]).unwrap();
        let (ab, bb) = (dev.upload(Stage::Ntt, &ctx, &a).unwrap(), dev.upload(Stage::Ntt, &ctx, &b).unwrap());
        let out = dev.alloc(Stage::Ntt, &ctx, 8 * 11 * n as u64).unwrap();
        let mut job = dev.job(Stage::Ntt, &ctx);
        job.dispatch(&k, &[&ab, &bb, &out], &[n as u32], groups_for(n as u64)).unwrap();
        job.submit().unwrap();
        let got = dev.read(Stage::Ntt, &ctx, &[(&out, 0, 11 * n as u64)]).unwrap();
        let want = expected(&a, &b);
        let names =
            ["add", "sub", "mul", "inv", "neg", "ext mul", "ext mul", "ext mul", "ext inv", "ext inv", "ext inv"];
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let (i, op) = (k / 11, k % 11);
            assert_eq!(g, w, "int64 {int64}: {} of {:#x}, {:#x}", names[op], a[i], b[i]);
        }
    }
}

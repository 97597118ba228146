//! The Merkle leaf kernels, compiled for the host by the system C++
//! compiler (`CXX`, else `c++`) with a thread loop in place of the grid,
//! against the reference's leaf digests on random rows. CI has no GPU;
//! this checks the kernels' own text: every width class (inside, at and
//! past a BLAKE3 block, Keccak's rate and a BLAKE3 chunk), and the
//! block-at-a-time kernels however the blocks are split between calls.

use backend_api::hash::hash_leaf;
use backend_api::{HashKind, F};
use kernels_cuda::{BLAKE3_H, KECCAK_H, MERKLE_BLAKE3, MERKLE_KECCAK};
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::Command;

/// Writes the sources into `dir` and compiles the harness there.
fn build(dir: &Path) -> std::path::PathBuf {
    for (name, text) in [
        ("blake3.cuh", BLAKE3_H),
        ("keccak.cuh", KECCAK_H),
        ("merkle_blake3.cu", MERKLE_BLAKE3.body),
        ("merkle_keccak.cu", MERKLE_KECCAK.body),
        ("merkle_leaves.cpp", include_str!("host/merkle_leaves.cpp")),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let exe = dir.join("merkle_leaves");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let out = Command::new(&cxx)
        .args(["-O1", "-std=c++17", "-w", "-o"])
        .arg(&exe)
        .arg(dir.join("merkle_leaves.cpp"))
        .output()
        .unwrap_or_else(|e| panic!("this test needs a C++ compiler ({cxx}: {e}); set CXX"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    exe
}

#[test]
fn leaf_kernels_match_the_reference_however_blocks_are_split() {
    let dir = std::env::temp_dir().join(format!("kiln-merkle-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let variants = ["leaves", "a block at a time", "three or two at a time", "all at once"];
    for width in [1usize, 7, 8, 9, 16, 17, 18, 34, 35, 64, 127, 128, 129, 256, 300] {
        let height = 1 + r.gen_range(0..40);
        let m: Vec<u64> = (0..width * height).map(|_| F::new(r.gen()).value()).collect();
        let mut input = vec![height as u64, width as u64];
        input.extend(&m);
        let (src, dst) = (dir.join("m.bin"), dir.join("d.bin"));
        std::fs::write(&src, bytemuck_bytes(&input)).unwrap();
        let run = Command::new(&exe).arg(&src).arg(&dst).status().unwrap();
        assert!(run.success(), "harness exited with {run}");
        let out = std::fs::read(&dst).unwrap();
        let per = 32 * height;
        assert_eq!(out.len(), 8 * per, "width {width}");
        for (k, got) in out.chunks(per).enumerate() {
            let hash = if k < 4 { HashKind::Blake3 } else { HashKind::Keccak256 };
            for row in 0..height {
                let values: Vec<F> = (0..width).map(|c| F::new(m[c * height + row])).collect();
                let want = hash_leaf(hash, &values);
                assert_eq!(
                    &got[32 * row..32 * row + 32],
                    &want,
                    "{hash} {}, width {width}, row {row}",
                    variants[k % 4]
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn bytemuck_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

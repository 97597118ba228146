//! The Merkle kernels, compiled for the host by the system C++ compiler
//! (`CXX`, else `c++`) with a loop over the blocks in place of the grid,
//! against the reference's digests. CI has no GPU; this checks the
//! kernels' own text: leaves at every width class (inside, at and past a
//! BLAKE3 block, Keccak's rate and a BLAKE3 chunk), the block-at-a-time
//! leaf kernels however the blocks are split between calls, and trees
//! built a level a launch, a subtree a block and the top in one block.

use backend_api::hash::{hash_leaf, hash_node};
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
        let run = Command::new(&exe).arg("leaves").arg(&src).arg(&dst).status().unwrap();
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

#[test]
fn tree_kernels_build_the_reference_tree_however_levels_are_grouped() {
    let dir = std::env::temp_dir().join(format!("kiln-merkle-tree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir);
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    for log_n in [0u32, 1, 3, 9, 12] {
        let n = 1usize << log_n;
        let leaves: Vec<[u8; 32]> = (0..n).map(|_| r.gen()).collect();
        for (k, hash) in HashKind::ALL.into_iter().enumerate() {
            let mut want = leaves.clone();
            let mut level = leaves.clone();
            while level.len() > 1 {
                level = level.chunks(2).map(|p| hash_node(hash, &p[0], &p[1])).collect();
                want.extend(&level);
            }
            let mut input = vec![n as u64];
            input.extend(leaves.iter().flat_map(|d| d.chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap()))));
            let (src, dst) = (dir.join("t.bin"), dir.join("tree.bin"));
            std::fs::write(&src, bytemuck_bytes(&input)).unwrap();
            // As the backend groups them, then with small groups and thresholds
            // so that every kind of launch meets these small trees.
            for (from, levels) in [(1 << 16, 8), (4, 2), (1, 1), (64, 3), (2, 1)] {
                let run = Command::new(&exe)
                    .args(["tree", src.to_str().unwrap(), dst.to_str().unwrap()])
                    .args([k.to_string(), from.to_string(), levels.to_string()])
                    .status()
                    .unwrap();
                assert!(run.success(), "harness exited with {run}");
                let got = std::fs::read(&dst).unwrap();
                assert_eq!(got.len(), 32 * want.len());
                for (i, (g, w)) in got.chunks(32).zip(&want).enumerate() {
                    assert_eq!(g, w, "{hash} tree of {n} leaves (from {from}, {levels} a launch): digest {i}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn bytemuck_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

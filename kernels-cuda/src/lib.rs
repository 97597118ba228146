//! CUDA C sources of every Kiln kernel, embedded at build time, with their
//! Rust index (module names, kernel names, the headers each module needs).
//!
//! This crate owns the device code only; it needs no CUDA install to build.
//! `backend-cuda` compiles these sources at run time with NVRTC for the
//! device's own architecture. A module's full source is its headers
//! followed by its body ([`Module::source`]), so NVRTC needs no include
//! paths.
//!
//! Modules:
//! - `ntt`: batched radix-2 NTT passes in shared memory (DIT/DIF, bit-reversed
//!   gather, zero-padding-skipping LDE expansion), the quotient degree check,
//!   coefficients times the powers of a shift in place;
//! - `ntt_warp`, `ntt_warp_lde`: natural-order 2^20-point NTTs as two
//!   passes of 1024-point transforms held in a warp's registers, and coset
//!   LDEs of 2^20 rows on them (two modules, compiled in parallel, and only
//!   when enabled);
//! - `merkle_blake3`, `merkle_keccak`: leaf and node hashing (two modules,
//!   compiled in parallel), gathers for openings;
//! - `grind`: proof-of-work search for both hashes;
//! - `fri`: FRI folding, DEEP quotients, barycentric evaluation.
//!
//! Constraint composition is generated per AIR by `backend-cuda` from the
//! constraint IR and prefixed with [`FIELD_H`].

/// Goldilocks and cubic-extension arithmetic (canonical values).
pub const FIELD_H: &str = include_str!("cuda/field.cuh");
/// BLAKE3 compression.
pub const BLAKE3_H: &str = include_str!("cuda/blake3.cuh");
/// Keccak-f\[1600\].
pub const KECCAK_H: &str = include_str!("cuda/keccak.cuh");
/// The warp NTT's device functions (`ntt_warp`, `ntt_warp_lde`).
pub const NTT_WARP_H: &str = include_str!("cuda/ntt_warp.cuh");

/// One NVRTC compilation unit.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    pub name: &'static str,
    pub headers: &'static [&'static str],
    pub body: &'static str,
    /// The `extern "C"` kernels it defines.
    pub kernels: &'static [&'static str],
}

impl Module {
    /// Headers and body, ready for NVRTC.
    pub fn source(&self) -> String {
        let mut s = String::new();
        for h in self.headers {
            s.push_str(h);
            s.push('\n');
        }
        s.push_str(self.body);
        s
    }
}

pub const NTT: Module = Module {
    name: "ntt",
    headers: &[FIELD_H],
    body: include_str!("cuda/ntt.cu"),
    kernels: &[
        "ntt_pass",
        "any_nonzero_tail",
        "mul_twist",
        "fold_coeffs",
        "bitrev_permute",
        "stride_rows",
        "interleave_piece",
    ],
};

pub const NTT_WARP: Module = Module {
    name: "ntt_warp",
    headers: &[FIELD_H, NTT_WARP_H],
    body: include_str!("cuda/ntt_warp.cu"),
    kernels: &["ntt_warp_a", "ntt_warp_b", "ntt_warp_outer"],
};

/// The warp NTT's coset LDEs, a module apart from `ntt_warp` so that the
/// two compile in parallel.
pub const NTT_WARP_LDE: Module = Module {
    name: "ntt_warp_lde",
    headers: &[FIELD_H, NTT_WARP_H],
    body: include_str!("cuda/ntt_warp_lde.cu"),
    kernels: &["ntt_warp_lde_a", "ntt_warp_twist"],
};

/// log2 of the transforms `ntt_warp` does.
pub const NTT_WARP_LOG_N: u32 = 20;
/// Warps (1024-point transforms) a block of `ntt_warp` holds.
pub const NTT_WARP_WARPS: u32 = 8;
/// Dynamic shared memory of an `ntt_warp` block: its tile of 1024 rows of
/// `NTT_WARP_WARPS + 1` words.
pub const NTT_WARP_SHARED_BYTES: u32 = 1024 * (NTT_WARP_WARPS + 1) * 8;

pub const MERKLE_BLAKE3: Module = Module {
    name: "merkle_blake3",
    headers: &[FIELD_H, BLAKE3_H],
    body: include_str!("cuda/merkle_blake3.cu"),
    kernels: &[
        "blake3_leaves",
        "blake3_leaf_blocks",
        "blake3_leaf_merge",
        "blake3_nodes",
        "blake3_levels",
        "gather_u64",
    ],
};

pub const MERKLE_KECCAK: Module = Module {
    name: "merkle_keccak",
    headers: &[FIELD_H, KECCAK_H],
    body: include_str!("cuda/merkle_keccak.cu"),
    kernels: &["keccak_leaves", "keccak_leaf_blocks", "keccak_nodes", "keccak_levels"],
};

pub const GRIND: Module = Module {
    name: "grind",
    headers: &[FIELD_H, BLAKE3_H, KECCAK_H],
    body: include_str!("cuda/grind.cu"),
    kernels: &["grind_blake3", "grind_keccak"],
};

pub const FRI: Module = Module {
    name: "fri",
    headers: &[FIELD_H],
    body: include_str!("cuda/fri.cu"),
    kernels: &["fri_fold", "lincomb", "lincomb_pair", "deep_accum", "bary_weights", "bary_partial"],
};

pub const LOGUP: Module = Module {
    name: "logup",
    headers: &[FIELD_H],
    body: include_str!("cuda/logup.cu"),
    kernels: &["ext_scan_blocks", "ext_add_block_offsets"],
};

pub const COMPOSE_INTERP: Module = Module {
    name: "compose_interp",
    headers: &[FIELD_H],
    body: include_str!("cuda/compose_interp.cu"),
    kernels: &["compose_interp"],
};

/// Value slots of the composition interpreter.
pub const INTERP_SLOTS: usize = 96;

/// Rows one `ext_scan_blocks` block scans.
pub const SCAN_ROWS_PER_BLOCK: usize = 256 * 8;
/// Threads of an `ext_scan_blocks` block.
pub const SCAN_THREADS: u32 = 256;

/// Every fixed module (the generated composition and LogUp kernels come on
/// top).
pub const MODULES: &[Module] =
    &[NTT, NTT_WARP, NTT_WARP_LDE, MERKLE_BLAKE3, MERKLE_KECCAK, GRIND, FRI, LOGUP, COMPOSE_INTERP];

#[cfg(test)]
mod tests {
    use super::*;

    /// ntt_warp_b rereads its row length by the PTX name NVVM gives a
    /// kernel's parameters (`<kernel>_param_<index>`): the index must be
    /// row_log's place in the signature.
    #[test]
    fn ntt_warp_b_rereads_its_row_length_by_the_right_parameter() {
        let src = NTT_WARP.body;
        let sig = &src[src.find("void ntt_warp_b(").expect("ntt_warp_b") + 16..];
        let params: Vec<&str> = sig[..sig.find(')').expect("signature")].split(',').map(str::trim).collect();
        let at = params.iter().position(|p| p.ends_with(" row_log")).expect("a row_log parameter");
        assert!(src.contains(&format!("[ntt_warp_b_param_{at}]")), "row_log is parameter {at} of {params:?}");
    }

    #[test]
    fn every_listed_kernel_is_defined_in_its_module() {
        for m in MODULES {
            let src = m.source();
            for k in m.kernels {
                assert!(src.contains(&format!("void {k}(")), "{} lacks kernel {k}", m.name);
            }
        }
    }
}

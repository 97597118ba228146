//! [`CudaConfig`]: every knob of a [`crate::CudaBackend`], given by the
//! caller. The backend never reads the environment itself; front ends (the
//! `kiln` CLI, benches, GPU test binaries) call [`CudaConfig::from_env`]
//! when they want the `KILN_CUDA_*` variables to apply.

use std::fmt;
use std::time::Duration;

/// The composition kernel: generated per constraint system and compiled by
/// NVRTC (the default: faster on every AIR measured, see the `compose`
/// module), or one fixed kernel interpreting an instruction list (no
/// compilation per AIR; systems that need more value slots than it has
/// fall back to the generated kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComposeKernel {
    #[default]
    Generated,
    Interpreted,
}

/// NTT launch shapes (defaults measured fastest on the H200,
/// docs/gpu/logs/ntt-tuning.log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttTuning {
    /// log2 of the largest tile a block holds in shared memory, 10..=13
    /// (13 where the device allows 64 KiB of dynamic shared memory).
    pub tile_log: u32,
    /// Most threads of an NTT block, a power of two in 64..=1024.
    pub threads: u32,
    /// Butterfly levels per shared-memory round trip, as a radix: 4 (two
    /// levels in registers) or 2.
    pub radix: u32,
    /// Coalesced first pass of natural-order transforms.
    pub lanes: bool,
    /// LDE strategy: skip the zero-padded levels (first pass tiles of
    /// 2^min(log_blowup, 3) elements; 1.2-1.4x faster at 2^20 x 64) or run
    /// them in shared memory (whole contiguous tiles).
    pub lde_skip_zero_levels: bool,
    /// Runs an overlapped upload-and-extend splits a matrix into, 1..=64
    /// (each at most 64 MiB): the first run's transfer is the LDE's head
    /// start, the last run's extension its tail. 16 took the 2^20 x 64
    /// trace's main round from 19.8-20.2 ms (8 runs) to 18.6-18.9 ms on the
    /// H200 (docs/gpu/logs/s18/tuning.log).
    pub upload_runs: u32,
    /// Natural-order transforms of 2^20 points (`ntt`, `intt`) as two
    /// passes of 1024-point transforms held in a warp's registers, and
    /// coset LDEs of 2^20 rows at blowups up to 8 as 2^b of them
    /// (kernels-cuda's `ntt_warp` and `ntt_warp_lde`; off, neither module
    /// is compiled nor their tables made). On an H100: 64 columns' NTT in
    /// 1.07 ms where the shared-memory passes take 2.00 ms, their LDE at
    /// blowup 2 / 4 / 8 in 4.0-4.1 / 6.3-6.4 / 11.0 ms where the passes
    /// take 7.2-7.3 / 12.0-12.2 / 21.6-21.8 ms (docs/gpu/RESULTS.md
    /// section 38).
    pub warp: bool,
}

impl Default for NttTuning {
    fn default() -> NttTuning {
        NttTuning {
            tile_log: 13,
            threads: 256,
            radix: 4,
            lanes: true,
            lde_skip_zero_levels: true,
            upload_runs: 16,
            warp: true,
        }
    }
}

/// How a [`crate::CudaBackend`] uses its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaConfig {
    /// The byte budget of this backend's memory gate. Default: free memory
    /// when the backend is made, minus [`crate::SAFETY_MARGIN_BYTES`]. The
    /// gate belongs to the backend (clones share it): make one backend per
    /// device and share it.
    pub memory_budget_bytes: Option<u64>,
    /// Allocate from a stream-ordered pool of our own capped at this many
    /// bytes (allocations past the cap are refused by the driver, a real
    /// device decline); default: the device's default pool, uncapped.
    pub pool_limit_bytes: Option<u64>,
    /// How composition runs.
    pub compose: ComposeKernel,
    pub ntt: NttTuning,
    /// How long a proof waits for the memory gate to admit it before the
    /// reservation is declined (default 10 minutes).
    pub admission_timeout: Option<Duration>,
    /// Streams in the pool (1..=64): stream 0 runs work outside any lane,
    /// lanes (tables of proofs) spread over the others. 1 runs everything
    /// in order on one stream.
    pub streams: usize,
    /// Record every stream's buffer uses and fail the next operation at a
    /// free or reuse not ordered after them (see `race`). Slower: every
    /// CUDA call is made under one lock.
    pub debug_races: bool,
    /// Pinned staging sets (2 x 16 MiB each) for large transfers; a
    /// transfer that finds none free copies from pageable memory.
    pub staging_sets: usize,
    /// `upload_commit` hashes each row's leaf a block of columns at a time
    /// as the runs of an overlapped upload are extended, so only the inner
    /// levels of the tree follow the last run (rows' leaf states held on
    /// the device meanwhile: 32 bytes a row and chunk with BLAKE3, 200 with
    /// Keccak-256). Off: the extension is committed once complete. Off by
    /// default until timed on a GPU against the committed-after order.
    pub leaves_under_upload: bool,
    /// Time every operation's device work with two events on its stream
    /// (see `CudaBackend::timeline`). Off by default: two more events an
    /// operation.
    pub timeline: bool,
}

impl Default for CudaConfig {
    fn default() -> CudaConfig {
        CudaConfig {
            memory_budget_bytes: None,
            pool_limit_bytes: None,
            compose: ComposeKernel::default(),
            ntt: NttTuning::default(),
            admission_timeout: None,
            streams: 8,
            debug_races: false,
            staging_sets: 4,
            leaves_under_upload: false,
            timeline: false,
        }
    }
}

/// A `KILN_CUDA_*` variable with a value the backend cannot use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub var: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: expected {}", self.var, self.value, self.expected)
    }
}

impl std::error::Error for ConfigError {}

impl CudaConfig {
    /// The defaults with the `KILN_CUDA_*` tuning variables applied:
    /// `KILN_CUDA_NTT_TILE_LOG` (10..=13), `KILN_CUDA_NTT_THREADS` (64..=1024,
    /// a power of two), `KILN_CUDA_NTT_RADIX` (2 or 4), `KILN_CUDA_NTT_LANES`
    /// (0 or 1), `KILN_CUDA_NTT_WARP` (0 or 1), `KILN_CUDA_LDE_SKIP` (0 or 1), `KILN_CUDA_UPLOAD_RUNS`
    /// (1..=64), `KILN_CUDA_COMPOSE`
    /// (`generated` or `interpret`), `KILN_CUDA_STREAMS` (1..=64),
    /// `KILN_CUDA_DEBUG_RACES` (0 or 1), `KILN_CUDA_LEAVES_UNDER_UPLOAD` (0
    /// or 1), `KILN_CUDA_TIMELINE` (0 or 1). An unusable value is an error
    /// naming the variable, not a silent default.
    pub fn from_env() -> Result<CudaConfig, ConfigError> {
        CudaConfig::from_vars(|k| std::env::var(k).ok())
    }

    /// [`CudaConfig::from_env`] over any source of variables.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<CudaConfig, ConfigError> {
        let mut c = CudaConfig::default();
        let get = |k: &'static str| var(k).map(|v| (k, v.trim().to_string())).filter(|(_, v)| !v.is_empty());
        let bad = |var: &'static str, value: String, expected: &'static str| ConfigError { var, value, expected };
        let flag = |(k, v): (&'static str, String)| match v.as_str() {
            "0" => Ok(false),
            "1" => Ok(true),
            _ => Err(bad(k, v, "0 or 1")),
        };
        if let Some((k, v)) = get("KILN_CUDA_NTT_TILE_LOG") {
            c.ntt.tile_log = v.parse().ok().filter(|t| (10..=13).contains(t)).ok_or_else(|| bad(k, v, "10..=13"))?;
        }
        if let Some((k, v)) = get("KILN_CUDA_NTT_THREADS") {
            c.ntt.threads = v
                .parse::<u32>()
                .ok()
                .filter(|t| (64..=1024).contains(t) && t.is_power_of_two())
                .ok_or_else(|| bad(k, v, "a power of two in 64..=1024"))?;
        }
        if let Some((k, v)) = get("KILN_CUDA_NTT_RADIX") {
            c.ntt.radix = v.parse().ok().filter(|r| *r == 2 || *r == 4).ok_or_else(|| bad(k, v, "2 or 4"))?;
        }
        if let Some(kv) = get("KILN_CUDA_NTT_LANES") {
            c.ntt.lanes = flag(kv)?;
        }
        if let Some(kv) = get("KILN_CUDA_NTT_WARP") {
            c.ntt.warp = flag(kv)?;
        }
        if let Some(kv) = get("KILN_CUDA_LDE_SKIP") {
            c.ntt.lde_skip_zero_levels = flag(kv)?;
        }
        if let Some((k, v)) = get("KILN_CUDA_UPLOAD_RUNS") {
            c.ntt.upload_runs = v.parse().ok().filter(|r| (1..=64).contains(r)).ok_or_else(|| bad(k, v, "1..=64"))?;
        }
        if let Some((k, v)) = get("KILN_CUDA_STREAMS") {
            c.streams = v.parse().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| bad(k, v, "1..=64"))?;
        }
        if let Some(kv) = get("KILN_CUDA_DEBUG_RACES") {
            c.debug_races = flag(kv)?;
        }
        if let Some(kv) = get("KILN_CUDA_LEAVES_UNDER_UPLOAD") {
            c.leaves_under_upload = flag(kv)?;
        }
        if let Some(kv) = get("KILN_CUDA_TIMELINE") {
            c.timeline = flag(kv)?;
        }
        if let Some((k, v)) = get("KILN_CUDA_COMPOSE") {
            c.compose = match v.as_str() {
                "generated" => ComposeKernel::Generated,
                "interpret" => ComposeKernel::Interpreted,
                _ => return Err(bad(k, v, "generated or interpret")),
            };
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let owned: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn variables_apply_and_bad_values_are_named() {
        assert_eq!(CudaConfig::from_vars(vars(&[])), Ok(CudaConfig::default()));
        let c = CudaConfig::from_vars(vars(&[
            ("KILN_CUDA_NTT_TILE_LOG", "11"),
            ("KILN_CUDA_NTT_THREADS", "512"),
            ("KILN_CUDA_NTT_RADIX", "2"),
            ("KILN_CUDA_NTT_LANES", "0"),
            ("KILN_CUDA_NTT_WARP", "0"),
            ("KILN_CUDA_LDE_SKIP", "0"),
            ("KILN_CUDA_UPLOAD_RUNS", "5"),
            ("KILN_CUDA_COMPOSE", "interpret"),
            ("KILN_CUDA_STREAMS", "3"),
            ("KILN_CUDA_DEBUG_RACES", "1"),
            ("KILN_CUDA_LEAVES_UNDER_UPLOAD", "1"),
            ("KILN_CUDA_TIMELINE", "1"),
        ]))
        .unwrap();
        assert_eq!((c.streams, c.debug_races, c.leaves_under_upload, c.timeline), (3, true, true, true));
        assert!(CudaConfig::from_vars(vars(&[("KILN_CUDA_STREAMS", "0")])).is_err());
        assert_eq!(
            c.ntt,
            NttTuning {
                tile_log: 11,
                threads: 512,
                radix: 2,
                lanes: false,
                lde_skip_zero_levels: false,
                upload_runs: 5,
                warp: false,
            }
        );
        assert_eq!(c.compose, ComposeKernel::Interpreted);
        let e = CudaConfig::from_vars(vars(&[("KILN_CUDA_NTT_THREADS", "300")])).unwrap_err();
        assert_eq!(e.var, "KILN_CUDA_NTT_THREADS");
        assert!(e.to_string().contains("power of two"), "{e}");
        assert!(CudaConfig::from_vars(vars(&[("KILN_CUDA_COMPOSE", "fast")])).is_err());
        assert!(CudaConfig::from_vars(vars(&[("KILN_CUDA_LDE_SKIP", "yes")])).is_err());
        assert!(CudaConfig::from_vars(vars(&[("KILN_CUDA_LEAVES_UNDER_UPLOAD", "on")])).is_err());
        // Empty means unset.
        assert_eq!(CudaConfig::from_vars(vars(&[("KILN_CUDA_NTT_RADIX", " ")])), Ok(CudaConfig::default()));
    }
}

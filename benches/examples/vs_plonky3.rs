//! Kiln's CPU backend beside Plonky3 (the crates.io release pinned in
//! benches/Cargo.toml) on identical inputs, in one process: coset LDE,
//! Merkle commitment of the LDE rows, and the whole prove of the cubic AIR
//! (next[i] = cur[i]^3 + cur[(i+1) % W] + i, boundary cur[0] = public).
//! Each pair runs A B B A `--reps` times; the table gives medians and
//! ours / theirs. Outputs are checked: the LDEs value by value, the Merkle
//! roots byte for byte, each proof by its own verifier.
//!
//! RUSTFLAGS="-C target-cpu=x86-64-v4" cargo run --release -p benches --example vs_plonky3 --
//!     [--lde 16,18] [--blowups 2,8] [--prove 15] [--width 64] [--reps 1] [--only lde|merkle|prove]
//! (the defaults take about a minute on 2 cores; the shapes are
//! `--lde 20 --prove 20`).

use backend_api::{BackendBase, ColMatrix, Ctx, DeviceTree, HashKind, MerkleOps, NttOps, F, GENERATOR};
use backend_cpu::CpuBackend;
use benches::random_matrix;
use p3_air::{Air, AirBuilder, BaseAir, WindowAccess};
use p3_blake3::Blake3;
use p3_challenger::{HashChallenger, SerializingChallenger64};
use p3_commit::{ExtensionMmcs, Mmcs};
use p3_dft::{Radix2DitParallel, TwoAdicSubgroupDft};
use p3_field::extension::BinomialExtensionField;
use p3_field::{PrimeCharacteristicRing, PrimeField64};
use p3_fri::{FriParameters, TwoAdicFriPcs};
use p3_goldilocks::Goldilocks;
use p3_keccak::{Keccak256Hash, KeccakF, VECTOR_LEN};
use p3_matrix::bitrev::BitReversibleMatrix;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{CompressionFunctionFromHasher, CryptographicHasher, PaddingFreeSponge, SerializingHasher};
use p3_uni_stark::StarkConfig;
use stark::examples::Cubic;
use stark::{Acceptance, ProofOptions, SingleTable};
use std::process::ExitCode;
use std::time::{Duration, Instant};

struct Args {
    lde: Vec<u32>,
    blowups: Vec<u32>,
    prove: u32,
    width: usize,
    reps: usize,
    only: Option<String>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args { lde: vec![16, 18], blowups: vec![2, 8], prove: 15, width: 64, reps: 1, only: None };
    let list = |v: &str| -> Result<Vec<u32>, String> {
        v.split(',').map(|x| x.parse().map_err(|e| format!("{v}: {e}"))).collect()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--lde" => a.lde = list(&v)?,
            "--blowups" => a.blowups = list(&v)?,
            "--prove" => a.prove = v.parse().map_err(|e| format!("--prove: {e}"))?,
            "--width" => a.width = v.parse().map_err(|e| format!("--width: {e}"))?,
            "--reps" => a.reps = v.parse().map_err(|e| format!("--reps: {e}"))?,
            "--only" if ["lde", "merkle", "prove"].contains(&v.as_str()) => a.only = Some(v),
            _ => return Err(format!("unknown argument {flag} {v}")),
        }
    }
    if a.blowups.iter().any(|b| !b.is_power_of_two() || *b < 2 || *b > 16) {
        return Err("blowups are 2, 4, 8 or 16".into());
    }
    if a.lde.iter().chain([&a.prove]).any(|l| *l < 4 || *l > 22) || a.width < 2 || a.reps == 0 {
        return Err("sizes: log rows 4..=22, width >= 2, reps >= 1".into());
    }
    Ok(a)
}

/// A B B A, `reps` times: each closure runs 2 * reps times, interleaved so
/// that drift (thermal, other load) falls on both sides alike.
fn abba(reps: usize, mut a: impl FnMut() -> Duration, mut b: impl FnMut() -> Duration) -> (Duration, Duration) {
    let (mut ta, mut tb) = (vec![], vec![]);
    for _ in 0..reps {
        ta.push(a());
        tb.push(b());
        tb.push(b());
        ta.push(a());
    }
    (median(ta), median(tb))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// Times `f`; its result is dropped after the clock stops.
fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t0 = Instant::now();
    let r = f();
    (t0.elapsed(), r)
}

fn gl(v: F) -> Goldilocks {
    Goldilocks::new(v.value())
}

fn row_major(m: &ColMatrix) -> RowMajorMatrix<Goldilocks> {
    let (w, n) = (m.width(), m.height());
    let mut values = Vec::with_capacity(w * n);
    for r in 0..n {
        values.extend((0..w).map(|c| gl(m.get(r, c))));
    }
    RowMajorMatrix::new(values, w)
}

struct Row {
    what: String,
    ours: Duration,
    theirs: Duration,
    check: String,
}

fn print_table(rows: &[Row]) {
    println!("\n| work | Kiln (ms) | Plonky3 (ms) | ours / theirs | check |");
    println!("|---|---:|---:|---:|---|");
    for r in rows {
        let (a, b) = (r.ours.as_secs_f64() * 1e3, r.theirs.as_secs_f64() * 1e3);
        println!("| {} | {a:.1} | {b:.1} | {:.2} | {} |", r.what, a / b, r.check);
    }
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    machine_facts();
    let mut rows = vec![];
    let run = |part: &str| args.only.as_deref().is_none_or(|o| o == part);
    let result = (|| -> Result<(), String> {
        if run("lde") || run("merkle") {
            for &log_n in &args.lde {
                lde_and_merkle(&args, log_n, run("lde"), run("merkle"), &mut rows)?;
            }
        }
        if run("prove") {
            prove(&args, &mut rows)?;
        }
        Ok(())
    })();
    print_table(&rows);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn machine_facts() {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        // A carried binary: docs/gpu/build.sh writes the commit beside it.
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            std::fs::read_to_string(exe.parent()?.join("commit")).ok().map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cpu: {cpu}; threads: {}; commit: {commit}", rayon::current_num_threads());
    println!("peer: Plonky3 0.8.0 (crates.io), Radix2DitParallel, MerkleTreeMmcs, uni-stark");
    // Plonky3 picks its SIMD field and Keccak code at compile time; Kiln's
    // CPU backend detects AVX-512 at run time. Without these features
    // Plonky3 runs its scalar fallback.
    let simd = [
        ("avx2", cfg!(target_feature = "avx2")),
        ("avx512f", cfg!(target_feature = "avx512f")),
        ("neon", cfg!(target_feature = "neon")),
    ];
    let on: Vec<&str> = simd.iter().filter(|(_, on)| *on).map(|(n, _)| *n).collect();
    if on.is_empty() {
        println!("build: no SIMD target features: Plonky3 is scalar; build with RUSTFLAGS=\"-C target-cpu=x86-64-v4\" (or native)");
    } else {
        println!("build: target features {}", on.join(", "));
    }
}

fn lde_and_merkle(args: &Args, log_n: u32, lde: bool, merkle: bool, rows: &mut Vec<Row>) -> Result<(), String> {
    let b = CpuBackend::new();
    let ctx = Ctx::table("vs_plonky3");
    let w = args.width;
    let input = random_matrix(log_n, w, u64::from(log_n));
    let ours_in = b.upload(&ctx, &input).map_err(|e| e.to_string())?;
    let theirs_in = row_major(&input);
    let dft = Radix2DitParallel::<Goldilocks>::default();
    let shift = gl(GENERATOR);
    for &blowup in &args.blowups {
        let log_blowup = blowup.trailing_zeros();
        let what = format!("coset LDE 2^{log_n} x {w}, blowup {blowup}");
        // Warm both (twiddle tables are cached after the first call).
        let ours = b.coset_lde(&ctx, &ours_in, log_blowup, GENERATOR).map_err(|e| e.to_string())?;
        let theirs = dft.coset_lde_batch(theirs_in.clone(), log_blowup as usize, shift);
        // Plonky3 leaves the rows in bit-reversed storage (its FRI commits
        // them that way); `bit_reverse_rows` hands back that storage, whose
        // row i is natural row bitrev(i). Kiln's rows are in natural order.
        // Both use shift 7 and the same 2^32-nd root of unity, so the value
        // at natural row r, column c must be equal.
        let stored = theirs.bit_reverse_rows();
        let ours_host = b.download(&ctx, &ours).map_err(|e| e.to_string())?;
        let bits = log_n + log_blowup;
        let agree = (0..stored.height()).all(|i: usize| {
            let r = i.reverse_bits() >> (usize::BITS - bits);
            (0..w).all(|c| stored.values[i * w + c].as_canonical_u64() == ours_host.get(r, c).value())
        });
        if !agree {
            return Err(format!("{what}: Kiln and Plonky3 disagree"));
        }
        drop((ours, stored));
        if lde {
            let (t_ours, t_theirs) = abba(
                args.reps,
                || timed(|| b.coset_lde(&ctx, &ours_in, log_blowup, GENERATOR).unwrap()).0,
                || {
                    let m = theirs_in.clone();
                    timed(|| dft.coset_lde_batch(m, log_blowup as usize, shift)).0
                },
            );
            rows.push(Row { what, ours: t_ours, theirs: t_theirs, check: "values equal".into() });
        }
        if merkle {
            // The same natural-order LDE rows on both sides: Kiln hashes a
            // leaf as H(row as little-endian u64s) and a node as H(left ||
            // right), which is what MerkleTreeMmcs does with
            // SerializingHasher and CompressionFunctionFromHasher, so the
            // roots must be equal.
            let rows_rm = row_major(&ours_host);
            merkle_pair(args, &b, &ctx, &ours_host, &rows_rm, HashKind::Blake3, Blake3, rows)?;
            merkle_pair(args, &b, &ctx, &ours_host, &rows_rm, HashKind::Keccak256, Keccak256Hash, rows)?;
            merkle_keccak_f(args, &b, &ctx, &ours_host, &rows_rm, rows)?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn merkle_pair<H>(
    args: &Args,
    b: &CpuBackend,
    ctx: &Ctx,
    lde: &ColMatrix,
    lde_rows: &RowMajorMatrix<Goldilocks>,
    kind: HashKind,
    hash: H,
    rows: &mut Vec<Row>,
) -> Result<(), String>
where
    H: CryptographicHasher<u8, [u8; 32]> + Clone + Sync,
{
    let ours_in = b.upload(ctx, lde).map_err(|e| e.to_string())?;
    let mmcs = MerkleTreeMmcs::<Goldilocks, u8, _, _, 2, 32>::new(
        SerializingHasher::new(hash.clone()),
        CompressionFunctionFromHasher::<H, 2, 32>::new(hash),
        0,
    );
    let ours_root = b.commit(ctx, &ours_in, kind).map_err(|e| e.to_string())?.root();
    let (cap, _) = mmcs.commit_matrix(lde_rows.clone());
    let check = if cap.roots() == [ours_root] { "roots equal" } else { "ROOTS DIFFER" };
    let (t_ours, t_theirs) = abba(
        args.reps,
        || timed(|| b.commit(ctx, &ours_in, kind).unwrap()).0,
        || {
            let m = lde_rows.clone();
            timed(|| mmcs.commit_matrix(m)).0
        },
    );
    rows.push(Row {
        what: format!("Merkle {kind} over 2^{} x {} LDE rows", lde.height().trailing_zeros(), lde.width()),
        ours: t_ours,
        theirs: t_theirs,
        check: check.into(),
    });
    if cap.roots() != [ours_root] {
        return Err(format!("Merkle {kind}: roots differ"));
    }
    Ok(())
}

/// Plonky3's fast Keccak tree: a Keccak-f[1600] sponge over u64 words
/// (rate 17, 4-word digest), SIMD across rows. A different function from
/// Keccak-256 over bytes, so only the time is compared.
fn merkle_keccak_f(
    args: &Args,
    b: &CpuBackend,
    ctx: &Ctx,
    lde: &ColMatrix,
    lde_rows: &RowMajorMatrix<Goldilocks>,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let ours_in = b.upload(ctx, lde).map_err(|e| e.to_string())?;
    let sponge = PaddingFreeSponge::<KeccakF, 25, 17, 4>::new(KeccakF);
    let mmcs = MerkleTreeMmcs::<[Goldilocks; VECTOR_LEN], [u64; VECTOR_LEN], _, _, 2, 4>::new(
        SerializingHasher::new(sponge),
        CompressionFunctionFromHasher::<_, 2, 4>::new(sponge),
        0,
    );
    let (t_ours, t_theirs) = abba(
        args.reps,
        || timed(|| b.commit(ctx, &ours_in, HashKind::Keccak256).unwrap()).0,
        || {
            let m = lde_rows.clone();
            timed(|| mmcs.commit_matrix(m)).0
        },
    );
    rows.push(Row {
        what: format!(
            "Merkle keccak vs Plonky3 Keccak-f u64 sponge, 2^{} x {}",
            lde.height().trailing_zeros(),
            lde.width()
        ),
        ours: t_ours,
        theirs: t_theirs,
        check: "different functions".into(),
    });
    Ok(())
}

/// The cubic AIR in Plonky3's terms: the same constraints as
/// `stark::examples::Cubic`.
struct P3Cubic {
    width: usize,
}

impl<T> BaseAir<T> for P3Cubic {
    fn width(&self) -> usize {
        self.width
    }
    fn num_public_values(&self) -> usize {
        1
    }
}

impl<AB: AirBuilder> Air<AB> for P3Cubic {
    fn eval(&self, builder: &mut AB) {
        let main = builder.main();
        let (cur, next) = (main.current_slice(), main.next_slice());
        let public = builder.public_values()[0];
        for i in 0..self.width {
            let x: AB::Expr = cur[i].into();
            let rhs = x.clone() * x.clone() * x + cur[(i + 1) % self.width].into() + AB::Expr::from_usize(i);
            builder.when_transition().assert_eq(next[i], rhs);
        }
        builder.when_first_row().assert_eq(cur[0], public);
    }
}

type Val = Goldilocks;
/// Plonky3's Goldilocks challenge field is the quadratic extension (Kiln's
/// is cubic); the FRI parameters below match Kiln's defaults.
type Challenge = BinomialExtensionField<Val, 2>;
type ValMmcs<H> = MerkleTreeMmcs<Val, u8, SerializingHasher<H>, CompressionFunctionFromHasher<H, 2, 32>, 2, 32>;
type P3Config<H> = StarkConfig<
    TwoAdicFriPcs<Val, Radix2DitParallel<Val>, ValMmcs<H>, ExtensionMmcs<Val, Challenge, ValMmcs<H>>>,
    Challenge,
    SerializingChallenger64<Val, HashChallenger<u8, H, 32>>,
>;

/// Blowup 4, 44 queries, 16 bits of query grinding, arity 4, final
/// polynomial of 8 coefficients: Kiln's `ProofOptions::default()`, 104
/// conjectured bits on both sides.
fn p3_config<H: CryptographicHasher<u8, [u8; 32]> + Clone + Sync>(hash: H) -> P3Config<H> {
    let o = ProofOptions::default();
    let mmcs = ValMmcs::new(SerializingHasher::new(hash.clone()), CompressionFunctionFromHasher::new(hash.clone()), 0);
    let fri = FriParameters {
        log_blowup: o.log_blowup as usize,
        log_final_poly_len: o.log_final_poly_len as usize,
        max_log_arity: o.log_fri_arity as usize,
        num_queries: o.num_queries,
        batch_proof_of_work_bits: 0,
        commit_proof_of_work_bits: 0,
        query_proof_of_work_bits: o.grinding_bits as usize,
        mmcs: ExtensionMmcs::new(mmcs.clone()),
    };
    let pcs = TwoAdicFriPcs::new(Radix2DitParallel::default(), mmcs, fri);
    StarkConfig::new(pcs, SerializingChallenger64::new(HashChallenger::new(vec![], hash)))
}

fn prove(args: &Args, rows: &mut Vec<Row>) -> Result<(), String> {
    let (log_n, w) = (args.prove, args.width);
    let cubic = SingleTable(Cubic::new(w));
    let (trace, publics) = cubic.0.trace(log_n, 1);
    let theirs_trace = row_major(&trace);
    let theirs_publics: Vec<Val> = publics.iter().map(|v| gl(*v)).collect();
    let b = CpuBackend::new();
    let p3air = P3Cubic { width: w };
    for hash in HashKind::ALL {
        let options = ProofOptions { hash, ..ProofOptions::default() };
        let bits = options.security(log_n + options.log_blowup).bits;
        let ours = || {
            let t = trace.clone();
            timed(|| stark::prove(&b, &cubic, vec![t], &publics, &options))
        };
        macro_rules! theirs {
            ($config:expr) => {{
                let config = $config;
                let theirs = || {
                    let t = theirs_trace.clone();
                    timed(|| p3_uni_stark::prove(&config, &p3air, t, &theirs_publics))
                };
                // One checked proof each, then the timed pairs.
                let proof = ours().1.map_err(|e| format!("Kiln prove: {e}"))?;
                stark::verify(&cubic, &publics, &proof, &Acceptance::Options(options))
                    .map_err(|e| format!("Kiln verify: {e}"))?;
                let p3proof = theirs().1.map_err(|e| format!("Plonky3 prove: {e:?}"))?;
                p3_uni_stark::verify(&config, &p3air, &p3proof, &theirs_publics)
                    .map_err(|e| format!("Plonky3 verify: {e:?}"))?;
                abba(args.reps, || ours().0, || theirs().0)
            }};
        }
        let (t_ours, t_theirs) = match hash {
            HashKind::Blake3 => theirs!(p3_config(Blake3)),
            HashKind::Keccak256 => theirs!(p3_config(Keccak256Hash)),
        };
        rows.push(Row {
            what: format!("prove cubic AIR 2^{log_n} x {w}, blowup 4, {hash}, {bits} bits"),
            ours: t_ours,
            theirs: t_theirs,
            check: "both verify".into(),
        });
    }
    Ok(())
}

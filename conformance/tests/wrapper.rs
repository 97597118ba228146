//! "Write a new backend, get the whole suite for free": `Forwarding` is a
//! complete backend of its own (its own matrix and tree types, shape
//! validation first) that computes with the CPU backend underneath, written
//! as one hook over `backend_api::Op` rather than fifteen trait methods.
//! One line instantiates the suite for it.

use backend_api::{
    BackendBase, ColMatrix, Ctx, DeviceMatrix, DeviceSet, DeviceTree, Digest, HashKind, HostPin, Lane, Op, OpHook, Out,
    Reservation, Result, Wrapper,
};
use backend_cpu::{CpuBackend, CpuMatrix, CpuTree};

/// A matrix "on the device".
pub struct FwdMatrix(CpuMatrix);

impl DeviceMatrix for FwdMatrix {
    fn height(&self) -> usize {
        self.0.height()
    }
    fn width(&self) -> usize {
        self.0.width()
    }
}

pub struct FwdTree(CpuTree);

impl DeviceTree for FwdTree {
    fn root(&self) -> Digest {
        self.0.root()
    }
    fn leaves(&self) -> usize {
        self.0.leaves()
    }
    fn hash(&self) -> HashKind {
        self.0.hash()
    }
}

#[derive(Default)]
pub struct Forwarding {
    cpu: CpuBackend,
}

/// The one hook: validate on our own types, map our handles onto the CPU
/// backend's, run, wrap the result in our types. The blanket impls in
/// `backend_api::wrap` make `Forwarding` a full `Backend`.
impl OpHook for Forwarding {
    type Matrix = FwdMatrix;
    type Tree = FwdTree;

    fn name(&self) -> &str {
        "forwarding"
    }

    fn run(&self, ctx: &Ctx, op: Op<'_, &FwdMatrix, &FwdTree>) -> Result<Out<FwdMatrix, FwdTree>> {
        op.validate()?;
        let inner = op.map(|m| &m.0, |t| &t.0);
        Ok(inner.dispatch(&self.cpu, ctx)?.map(FwdMatrix, FwdTree))
    }

    fn drain(&self) -> Result<()> {
        Ok(())
    }

    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        self.cpu.reserve(ctx, lanes, set)
    }

    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        self.cpu.pin(ctx, m)
    }
}

// The whole suite, one test per operation group, from one line.
conformance::suite!(forwarding, Forwarding::default());

/// The common first step of a new backend: a layer that counts and
/// forwards. One override; the proof is the inner backend's, byte for byte.
#[derive(Default)]
struct Counting {
    inner: CpuBackend,
    calls: std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>>,
}

impl Wrapper for Counting {
    type Inner = CpuBackend;

    fn inner(&self) -> &CpuBackend {
        &self.inner
    }

    fn call(&self, ctx: &Ctx, op: Op<'_, &CpuMatrix, &CpuTree>) -> Result<Out<CpuMatrix, CpuTree>> {
        *self.calls.lock().unwrap().entry(op.name()).or_default() += 1;
        op.dispatch(&self.inner, ctx)
    }
}

#[test]
fn a_counting_wrapper_is_one_hook_and_changes_no_byte() {
    use stark::examples::TwoTables;
    let options = stark::ProofOptions { log_blowup: 2, num_queries: 8, grinding_bits: 2, ..Default::default() };
    let machine = TwoTables::default();
    let counting = Counting::default();
    let got = stark::prove(&counting, &machine, TwoTables::traces(5, 3), &[], &options).unwrap().to_bytes();
    let want = stark::prove(&CpuBackend::new(), &machine, TwoTables::traces(5, 3), &[], &options).unwrap().to_bytes();
    assert!(got == want, "the wrapper changed the proof");
    let calls = counting.calls.lock().unwrap();
    for op in ["upload_commit", "coset_lde", "commit", "logup_aux", "compose", "split_quotient", "evaluate_at", "open"]
    {
        assert!(calls.get(op).copied().unwrap_or(0) > 0, "{op} never reached the hook: {calls:?}");
    }
    assert_eq!(calls.get("grind"), Some(&1), "{calls:?}");
}

/// One backend shared by reference count (as `kiln serve` holds its
/// device) proves the reference's bytes, from several threads at once.
#[test]
fn a_shared_backend_is_the_backend_behind_it() {
    use stark::examples::TwoTables;
    let options = stark::ProofOptions { log_blowup: 2, num_queries: 8, grinding_bits: 2, ..Default::default() };
    let machine = TwoTables::default();
    let want = stark::prove(&CpuBackend::new(), &machine, TwoTables::traces(5, 3), &[], &options).unwrap().to_bytes();
    let shared = std::sync::Arc::new(CpuBackend::new());
    std::thread::scope(|s| {
        let proves: Vec<_> = (0..3)
            .map(|_| {
                let b = shared.clone();
                let options = &options;
                s.spawn(move || stark::prove(&b, &TwoTables::default(), TwoTables::traces(5, 3), &[], options))
            })
            .collect();
        for p in proves {
            assert!(p.join().unwrap().unwrap().to_bytes() == want, "a shared backend changed the proof");
        }
    });
    assert_eq!(BackendBase::name(&shared), "cpu");
}

/// A hook that answers an op with the wrong kind of result is a typed
/// error naming the stage, not a panic.
struct Confused;

impl OpHook for Confused {
    type Matrix = CpuMatrix;
    type Tree = CpuTree;
    fn name(&self) -> &str {
        "confused"
    }
    fn run(&self, _ctx: &Ctx, _op: Op<'_, &CpuMatrix, &CpuTree>) -> Result<Out<CpuMatrix, CpuTree>> {
        Ok(Out::Nonce(7))
    }
    fn drain(&self) -> Result<()> {
        Ok(())
    }
    fn reserve(&self, _ctx: &Ctx, _lanes: &[Lane], _set: &DeviceSet) -> Result<Reservation> {
        Ok(Reservation::none())
    }
    fn pin(&self, _ctx: &Ctx, _m: &ColMatrix) -> Result<HostPin> {
        Ok(HostPin::none())
    }
}

#[test]
fn a_wrong_result_kind_is_a_typed_error() {
    use backend_api::{BackendBase, BackendError, NttOps, Stage};
    let m =
        CpuBackend::new().upload(&Ctx::table("t"), &backend_api::ColMatrix::new(1, 4, vec![backend_api::F::ONE; 4]));
    match Confused.ntt(&Ctx::table("t"), &m.unwrap()) {
        Err(BackendError::Device { stage: Stage::Ntt, table, message }) => {
            assert_eq!(table, "t");
            assert!(message.contains("returned a nonce where a matrix was expected"), "{message}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

//! Large host buffers: zeroed, fallible, on transparent huge pages where
//! the system has them. Every crate that fills multi-GiB host matrices
//! (the CPU backend, device downloads, trace generation, a spilling
//! prover) allocates them here: page faults, not copies, otherwise bound
//! how fast they fill. A backend holding such a buffer page-locked for
//! its uploads hands back a [`HostPin`].

use crate::backend::Ctx;
use crate::error::{BackendError, Stage};

/// A host allocation that failed, and its size. Ops turn it into
/// `BackendError::HostAlloc` naming their stage and table.
#[derive(Clone, Copy, Debug)]
pub struct AllocFailed {
    pub bytes: u64,
}

impl AllocFailed {
    pub fn at(self, stage: Stage, ctx: &Ctx) -> BackendError {
        BackendError::HostAlloc { stage, table: ctx.table.to_string(), requested_bytes: self.bytes }
    }
}

/// Fills a column-major buffer of columns `height` long in parallel, a
/// block of rows of one column a task: `fill(c, r0, block)` writes rows
/// r0.. of column c (`block.len()` of them). Blocks, not whole columns,
/// so a gather into a narrow matrix of many rows (a quotient has 3
/// columns) still spreads over every core, and position arithmetic stays
/// out of the per-element loop.
pub fn fill_columns<T: Send>(out: &mut [T], height: usize, fill: impl Fn(usize, usize, &mut [T]) + Sync) {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 15;
    if height == 0 {
        return;
    }
    out.par_chunks_mut(height).enumerate().for_each(|(c, col)| {
        col.par_chunks_mut(BLOCK).enumerate().for_each(|(b, block)| fill(c, b * BLOCK, block));
    });
}

/// `copy(dst piece, src piece)` over pieces of 512 KiB on every core:
/// copies into and out of a device's staging memory, which one thread's
/// memcpy (about 5 GB/s) would bound rather than the bus. `copy` is
/// `copy_from_slice`, or a variant with streamed stores.
pub fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T], copy: fn(&mut [T], &[T])) {
    use rayon::prelude::*;
    let piece = ((512 << 10) / std::mem::size_of::<T>().max(1)).max(1);
    dst.par_chunks_mut(piece).zip(src.par_chunks(piece)).for_each(|(d, s)| copy(d, s));
}

/// A zeroed buffer of `len` elements from the allocator's zeroed path
/// (calloc: large requests are fresh mmap pages, already zero), so the
/// zeros are not written by one thread before the parallel kernels write
/// the real values: the first touch of each page (its fault) happens in
/// the task that fills it. `vec![F::ZERO; len]` clones element by element.
///
/// On Linux, buffers of 4 MiB and more also ask for transparent huge
/// pages (`madvise(MADV_HUGEPAGE)`, advisory; ignored where THP is off):
/// one fault per 2 MiB instead of per 4 KiB on the multi-GiB LDE outputs.
/// `KILN_CPU_NO_HUGEPAGES=1` skips the advice (where huge-page faults are
/// slow, e.g. guest memory the hypervisor has not backed yet).
///
/// Large buffers are where host memory runs out, so the allocation is
/// fallible: a failure is an [`AllocFailed`], never a panic or an abort.
/// Trace generation (the `vm` crate), the CPU backend, downloads from a
/// device and a spilling prover take their large buffers here.
pub fn try_zeroed<T: bytemuck::Zeroable>(len: usize) -> std::result::Result<Vec<T>, AllocFailed> {
    // F is Zeroable (all-zero bits are F's zero), so bytemuck can take the
    // allocator's zeroed path.
    let failed = AllocFailed { bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64) };
    let out: Vec<T> = bytemuck::allocation::try_zeroed_vec(len).map_err(|_| failed)?;
    #[cfg(target_os = "linux")]
    if len * std::mem::size_of::<T>() >= 1 << 22 && huge_pages() {
        const PAGE: usize = 4096;
        let start = (out.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (out.as_ptr() as usize + len * std::mem::size_of::<T>()) & !(PAGE - 1);
        if end > start {
            // SAFETY: [start, end) is page-aligned and inside the buffer's
            // allocation; MADV_HUGEPAGE only changes how the kernel backs
            // those pages, never their contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    Ok(out)
}

/// Whether `zeroed` asks for transparent huge pages (decided once).
#[cfg(target_os = "linux")]
fn huge_pages() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("KILN_CPU_NO_HUGEPAGES").is_none_or(|v| v == "0"))
}

/// A host matrix's buffer held page-locked by a backend until this is
/// dropped ([`BackendBase::pin`](crate::BackendBase::pin)); host
/// backends hold nothing.
pub struct HostPin {
    bytes: u64,
    _guard: Option<Box<dyn Send + Sync>>,
}

impl HostPin {
    /// Nothing held.
    pub fn none() -> HostPin {
        HostPin { bytes: 0, _guard: None }
    }
    /// `bytes` held until `guard` is dropped.
    pub fn held(bytes: u64, guard: Box<dyn Send + Sync>) -> HostPin {
        HostPin { bytes, _guard: Some(guard) }
    }
    /// Pins by several backends (a cross-check's two sides), released
    /// together.
    pub fn both(a: HostPin, b: HostPin) -> HostPin {
        HostPin { bytes: a.bytes.max(b.bytes), _guard: Some(Box::new((a, b))) }
    }
    /// Bytes held page-locked (0 where the backend pins nothing).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl std::fmt::Debug for HostPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPin").field("bytes", &self.bytes).finish()
    }
}

//! Run-time compilation with NVRTC and the on-disk kernel cache.
//!
//! Sources are compiled for one target: machine code (`sm_XY`, a cubin) for
//! the device at hand, read from its compute capability, or PTX
//! (`compute_XY`) for the CI check. Cubins are cached on disk under
//! `$KILN_CACHE_DIR`, else `$XDG_CACHE_HOME/kiln/kernels`, else
//! `~/.cache/kiln/kernels`, keyed by a BLAKE3 hash of the source, the target,
//! the options and the NVRTC version.

use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;

/// What to compile a source into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Machine code for compute capability `major.minor` (`sm_XY`).
    Cubin(u32, u32),
    /// PTX for a virtual architecture (`compute_XY`).
    Ptx(u32, u32),
}

impl Target {
    pub fn arch_option(self) -> String {
        match self {
            Target::Cubin(ma, mi) => format!("--gpu-architecture=sm_{ma}{mi}"),
            Target::Ptx(ma, mi) => format!("--gpu-architecture=compute_{ma}{mi}"),
        }
    }
}

/// A compiled module: its image and NVRTC's log (warnings).
#[derive(Clone, Debug)]
pub struct Compiled {
    pub image: Vec<u8>,
    pub log: String,
    /// Whether the image came from the on-disk cache.
    pub cached: bool,
}

/// Options every kernel is compiled with.
pub const OPTIONS: &[&str] = &["--std=c++17", "-default-device"];

/// Whether libnvrtc can be loaded (checked before any NVRTC call: cudarc
/// panics on a missing library).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { sys::is_culib_present() }
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32), String> {
    if !nvrtc_present() {
        return Err("libnvrtc not found".into());
    }
    let (mut a, mut b) = (0, 0);
    // SAFETY: the library is present; the out-pointers are valid.
    let r = unsafe { sys::nvrtcVersion(&mut a, &mut b) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcVersion failed: {r:?}"));
    }
    Ok((a, b))
}

struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once.
        unsafe {
            let _ = sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

fn check(r: sys::nvrtcResult, what: &str) -> Result<(), String> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {r:?}"))
    }
}

/// Compiles `source` (named `name` in diagnostics) for `target`, without
/// the cache. Errors carry NVRTC's log.
pub fn compile_uncached(name: &str, source: &str, target: Target) -> Result<Compiled, String> {
    compile_with(name, source, target, &[])
}

/// [`compile_uncached`] with `extra` options after [`OPTIONS`] (for
/// measuring them: the cache keys only the standard options).
pub fn compile_with(name: &str, source: &str, target: Target, extra: &[&str]) -> Result<Compiled, String> {
    if !nvrtc_present() {
        return Err("libnvrtc not found".into());
    }
    let src = CString::new(source).map_err(|_| format!("{name}: source contains a NUL byte"))?;
    let cname = CString::new(format!("{name}.cu")).map_err(|_| "bad module name".to_string())?;
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings, no headers.
    check(
        unsafe {
            sys::nvrtcCreateProgram(&mut prog, src.as_ptr(), cname.as_ptr(), 0, std::ptr::null(), std::ptr::null())
        },
        "nvrtcCreateProgram",
    )?;
    let prog = Program(prog);
    let mut opts = Vec::new();
    for o in OPTIONS.iter().chain(extra) {
        opts.push(CString::new(*o).map_err(|_| format!("{name}: option {o:?} contains a NUL byte"))?);
    }
    opts.push(CString::new(target.arch_option()).expect("arch option"));
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: prog is live; ptrs point into `opts`, alive for the call.
    let r = unsafe { sys::nvrtcCompileProgram(prog.0, ptrs.len() as i32, ptrs.as_ptr()) };
    let log = program_log(&prog);
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("{name}: NVRTC compile failed ({r:?}) for {}:\n{log}", target.arch_option()));
    }
    let image = match target {
        Target::Cubin(..) => {
            let mut size = 0usize;
            // SAFETY: prog is compiled; buffer sized by NVRTC.
            check(unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) }, "nvrtcGetCUBINSize")?;
            let mut buf = vec![0u8; size];
            check(unsafe { sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut c_char) }, "nvrtcGetCUBIN")?;
            buf
        }
        Target::Ptx(..) => {
            let mut size = 0usize;
            // SAFETY: as above.
            check(unsafe { sys::nvrtcGetPTXSize(prog.0, &mut size) }, "nvrtcGetPTXSize")?;
            let mut buf = vec![0u8; size];
            check(unsafe { sys::nvrtcGetPTX(prog.0, buf.as_mut_ptr() as *mut c_char) }, "nvrtcGetPTX")?;
            buf
        }
    };
    Ok(Compiled { image, log, cached: false })
}

fn program_log(prog: &Program) -> String {
    let mut size = 0usize;
    // SAFETY: prog is live; buffer sized by NVRTC and NUL-terminated.
    unsafe {
        if sys::nvrtcGetProgramLogSize(prog.0, &mut size) != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        if sys::nvrtcGetProgramLog(prog.0, buf.as_mut_ptr() as *mut c_char) != sys::nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        CStr::from_bytes_until_nul(&buf).map(|c| c.to_string_lossy().trim().to_string()).unwrap_or_default()
    }
}

/// The kernel cache directory.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("KILN_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("kiln").join("kernels"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("kiln").join("kernels"))
}

/// The cache key of one compilation.
pub fn cache_key(source: &str, target: Target) -> Result<String, String> {
    let (ma, mi) = version()?;
    let mut h = blake3::Hasher::new();
    h.update(source.as_bytes());
    h.update(target.arch_option().as_bytes());
    for o in OPTIONS {
        h.update(o.as_bytes());
    }
    h.update(format!("nvrtc-{ma}.{mi}").as_bytes());
    let hex: String = h.finalize().as_bytes()[..12].iter().map(|b| format!("{b:02x}")).collect();
    let kind = match target {
        Target::Cubin(a, b) => format!("sm{a}{b}"),
        Target::Ptx(a, b) => format!("compute{a}{b}"),
    };
    Ok(format!("{kind}-nvrtc{ma}.{mi}-{hex}"))
}

/// Compiles through the on-disk cache. A cache that cannot be read or
/// written only costs a compilation.
pub fn compile(name: &str, source: &str, target: Target) -> Result<Compiled, String> {
    let key = cache_key(source, target)?;
    let path = cache_dir().map(|d| d.join(format!("{name}-{key}.bin")));
    if let Some(p) = &path {
        if let Ok(image) = std::fs::read(p) {
            if !image.is_empty() {
                return Ok(Compiled { image, log: String::new(), cached: true });
            }
        }
    }
    let c = compile_uncached(name, source, target)?;
    if let Some(p) = &path {
        if let Some(dir) = p.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                if std::fs::write(&tmp, &c.image).is_ok() {
                    let _ = std::fs::rename(&tmp, p);
                }
            }
        }
    }
    Ok(c)
}

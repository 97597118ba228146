//! `kiln serve`: one process keeps a backend open (for CUDA: the driver,
//! the context, the memory pool, the loaded kernels, the staging buffers)
//! and proves what `kiln prove --server SOCKET` sends it, so a prove pays
//! none of a device's start-up or teardown. The client sends its
//! arguments and working directory over a Unix socket; the server runs
//! `kiln prove` with them on its device, writes the files the arguments
//! name, and returns what the prove printed and its exit code, which the
//! client prints and exits with. Proves run in arrival order, one at a
//! time unless `--jobs` says more (each admitted by the device's memory
//! gate, as a batch's are).
//!
//! Each message is a 4-byte little-endian length, then that many bytes
//! of JSON: the request `{"cwd", "args"}`, the answer `{"stdout",
//! "stderr", "exit"}`.

use crate::startup::{GpuSettings, Served};
use crate::{one_line_clap_error, BackendChoice, Cli, CliResult, Cmd, ProveArgs};
use clap::{Args, Parser};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Requests past this size are refused (arguments, not data, travel).
const MAX_REQUEST: u32 = 1 << 20;
/// How long a connection may take to send its request.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Args)]
pub struct ServeArgs {
    /// The Unix socket to listen on (created owner-only; a stale one left by a killed server is replaced)
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// The backend to hold open: auto (a GPU of this build if one opens, else the CPU), cpu, cuda or wgpu
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Proves in flight at once, each admitted by the device's memory gate (with more than one, a prove's report leaves out the device's peak and timeline, which it shares)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    jobs: u64,
    #[command(flatten)]
    device: DeviceArgs,
}

/// The device flags of `kiln prove`, given once to the server.
#[derive(Args)]
struct DeviceArgs {
    /// The CUDA device to hold, by ordinal
    #[arg(long, value_name = "ORDINAL")]
    devices: Option<String>,
    /// Device memory proofs may hold at once: bytes, or with a K, M, G or T suffix (default: free memory at start less 2 GiB)
    #[arg(long, value_name = "BYTES", value_parser = crate::share::parse_bytes)]
    vram_budget: Option<u64>,
    /// Record the CUDA device's time by stage (two events an operation), which `kiln prove --server ... --timings` then prints
    #[arg(long)]
    timeline: bool,
}

thread_local! {
    /// What `say!` prints on this thread, while a served prove runs on it.
    static CAPTURED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// `say!`: a line to stdout, or to the served prove's answer.
pub fn say(line: fmt::Arguments) {
    let captured = CAPTURED.with(|c| c.borrow_mut().as_mut().map(|out| writeln!(out, "{line}")).is_some());
    if !captured {
        // A closed pipe (`kiln verify f | head -1`) is not the command's error.
        let _ = writeln!(std::io::stdout(), "{line}");
    }
}

/// Whether this thread's output goes to a client (no progress bar then).
pub fn capturing() -> bool {
    CAPTURED.with(|c| c.borrow().is_some())
}

/// The socket `kiln prove` sends its run to, if any: `--server`, else
/// `KILN_SERVER`.
pub fn server_for(a: &ProveArgs) -> Option<PathBuf> {
    a.server.clone().or_else(|| std::env::var_os("KILN_SERVER").filter(|v| !v.is_empty()).map(PathBuf::from))
}

/// `kiln prove --server SOCKET`: the run goes to the server; its output
/// is printed here and its exit code returned.
pub fn client(socket: &Path) -> ExitCode {
    match ask(socket) {
        Ok(answer) => {
            let text = |k: &str| answer[k].as_str().unwrap_or("").to_string();
            print!("{}", text("stdout"));
            eprint!("{}", text("stderr"));
            let _ = std::io::stdout().flush();
            ExitCode::from(answer["exit"].as_u64().and_then(|c| u8::try_from(c).ok()).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn ask(socket: &Path) -> CliResult<Value> {
    let server = socket.display();
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string().map_err(|a| format!("argument {a:?} is not UTF-8, which --server cannot send")))
        .collect::<CliResult<_>>()?;
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let cwd = cwd.to_str().ok_or("the working directory is not UTF-8, which --server cannot send")?;
    owned_by_us(socket)?;
    let mut stream =
        UnixStream::connect(socket).map_err(|e| format!("cannot reach the kiln server at `{server}`: {e}"))?;
    send(&mut stream, &json!({ "cwd": cwd, "args": args }))
        .map_err(|e| format!("cannot send the run to the kiln server at `{server}`: {e}"))?;
    receive(&mut stream, u32::MAX)
        .map_err(|e| format!("the kiln server at `{server}` closed the connection without an answer ({e})"))
}

/// The server writes files as its user and its answer is printed as the
/// prove's: a socket another user owns (a shared /tmp) is not trusted.
fn owned_by_us(socket: &Path) -> CliResult<()> {
    use std::os::unix::fs::MetadataExt;
    let server = socket.display();
    let meta = std::fs::metadata(socket).map_err(|e| format!("cannot reach the kiln server at `{server}`: {e}"))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "`{server}` belongs to user {}, not to this one (uid {me}): not sending it a run",
            meta.uid()
        ));
    }
    Ok(())
}

fn send(stream: &mut UnixStream, v: &Value) -> std::io::Result<()> {
    let bytes = v.to_string().into_bytes();
    let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("message too long"))?;
    stream.write_all(&len.to_le_bytes())?;
    stream.write_all(&bytes)?;
    stream.flush()
}

fn receive(stream: &mut UnixStream, max: u32) -> std::io::Result<Value> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len > max {
        return Err(std::io::Error::other(format!("a message of {len} bytes, past the {max} allowed")));
    }
    let mut bytes = vec![0u8; len as usize];
    stream.read_exact(&mut bytes)?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

/// `kiln serve`: opens the backend, then proves each request in turn
/// until killed.
pub fn cmd_serve(a: ServeArgs) -> CliResult<()> {
    let listener = bind(&a.socket)?;
    let t0 = Instant::now();
    let served = Served::open(a.backend, gpu_settings(&a)?, a.jobs == 1)?;
    let label = served.chosen.label();
    let jobs = a.jobs;
    eprintln!("kiln serve: {label} opened in {:.2?}; {jobs} at a time on {}", t0.elapsed(), a.socket.display());
    // Connections queue in arrival order; each worker takes the next.
    let (queue, next) = std::sync::mpsc::channel::<UnixStream>();
    let next = std::sync::Mutex::new(next);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let conn = next.lock().map_err(|_| ()).and_then(|rx| rx.recv().map_err(|_| ()));
                match conn {
                    Ok(mut stream) => serve_one(&mut stream, &served),
                    Err(()) => return,
                }
            });
        }
        for conn in listener.incoming() {
            match conn {
                Ok(stream) => {
                    if queue.send(stream).is_err() {
                        break;
                    }
                }
                Err(e) => eprintln!("kiln serve: a connection failed: {e}"),
            }
        }
        drop(queue);
    });
    Ok(())
}

/// The socket, bound owner-only. A socket file no server answers on is a
/// killed server's and is replaced; any other file at the path is not
/// touched.
fn bind(socket: &Path) -> CliResult<UnixListener> {
    let shown = socket.display();
    if let Ok(meta) = std::fs::symlink_metadata(socket) {
        if !meta.file_type().is_socket() {
            return Err(format!("`{shown}` exists and is not a socket: refusing to replace it"));
        }
        if UnixStream::connect(socket).is_ok() {
            return Err(format!("a kiln server already listens on `{shown}`"));
        }
        std::fs::remove_file(socket).map_err(|e| format!("cannot remove the stale socket `{shown}`: {e}"))?;
    }
    let listener = UnixListener::bind(socket).map_err(|e| format!("cannot listen on `{shown}`: {e}"))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot make `{shown}` owner-only: {e}"))?;
    Ok(listener)
}

/// The server's CUDA settings, as `kiln prove`'s flags would give them.
fn gpu_settings(a: &ServeArgs) -> CliResult<GpuSettings> {
    #[cfg(feature = "cuda")]
    let settings = {
        let mut config = backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string())?;
        config.memory_budget_bytes = a.device.vram_budget.or(config.memory_budget_bytes);
        config.timeline |= a.device.timeline;
        let spec = a.device.devices.as_deref().unwrap_or("0");
        let spec = backend_cuda::DeviceSpec::parse(spec).map_err(|e| format!("--devices: {e}"))?;
        let named = a.device.devices.is_some();
        GpuSettings { cuda: Some((config, spec)), options: stark::ProofOptions::default(), devices_named: named }
    };
    #[cfg(not(feature = "cuda"))]
    let settings = {
        let _ = (&a.device.devices, a.device.vram_budget, a.device.timeline);
        GpuSettings::default()
    };
    Ok(settings)
}

/// Answers one connection: a malformed request gets an error answer, a
/// client that went away is noted, and the server goes on either way.
fn serve_one(stream: &mut UnixStream, served: &Served) {
    let t0 = Instant::now();
    // A client that connects and sends nothing (another `kiln serve`
    // checking the socket) is let go; one that stalls cannot hold the line.
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let answer = match receive(stream, MAX_REQUEST) {
        Ok(request) => run(&request, served),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return,
        Err(e) => answer("", &format!("error: a malformed request: {e}\n"), 2),
    };
    let exit = answer["exit"].as_u64().unwrap_or(1);
    if let Err(e) = send(stream, &answer) {
        eprintln!("kiln serve: the client left before its answer ({e})");
    }
    eprintln!("kiln serve: a prove answered with exit {exit} in {:.2?}", t0.elapsed());
}

fn answer(stdout: &str, stderr: &str, exit: u8) -> Value {
    json!({ "stdout": stdout, "stderr": stderr, "exit": exit })
}

/// Runs one request's `kiln prove` on `served`, its output captured.
fn run(request: &Value, served: &Served) -> Value {
    let start = Instant::now();
    let cwd = PathBuf::from(request["cwd"].as_str().unwrap_or(""));
    let args: Vec<&str> = request["args"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if !cwd.is_absolute() {
        return answer("", "error: a malformed request: no absolute working directory\n", 2);
    }
    let mut a = match Cli::try_parse_from(std::iter::once("kiln").chain(args)) {
        Ok(Cli { cmd: Cmd::Prove(a) }) => a,
        Ok(_) => return answer("", "error: kiln serve runs `kiln prove` only\n", 2),
        Err(e) => return answer("", &format!("error: {}\n", one_line_clap_error(&e)), 2),
    };
    a.resolve_paths(&cwd);
    CAPTURED.with(|c| *c.borrow_mut() = Some(String::new()));
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::cmd_prove_with(a, start, Some(served))));
    let stdout = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    match result {
        Ok(Ok(())) => answer(&stdout, "", 0),
        Ok(Err(msg)) => answer(&stdout, &format!("error: {msg}\n"), 1),
        Err(p) => {
            let msg = crate::panic_text(&p);
            answer(&stdout, &format!("error: internal error: {}\n", msg.lines().next().unwrap_or("")), 101)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn say_goes_to_the_capture_while_one_is_set() {
        assert!(!capturing());
        CAPTURED.with(|c| *c.borrow_mut() = Some(String::new()));
        assert!(capturing());
        say(format_args!("proof {}", 7));
        let got = CAPTURED.with(|c| c.borrow_mut().take());
        assert_eq!(got.as_deref(), Some("proof 7\n"));
        assert!(!capturing());
    }
}

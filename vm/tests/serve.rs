//! `kiln serve` and `kiln prove --server`: a served prove writes the same
//! proof file a local one does, in the client's directory; errors come
//! back as the client's own (one line, exit code, no file); the server
//! outlives a failed prove and a vanished client; a second server, a
//! stale socket and an unreachable one are handled by name.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const KILN: &str = env!("CARGO_BIN_EXE_kiln");

fn example(name: &str) -> String {
    format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn kiln(dir: &Path, args: &[&str]) -> Output {
    Command::new(KILN).args(args).current_dir(dir).env_remove("KILN_SERVER").output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A `kiln serve --backend cpu` on `socket`, once it answers.
struct Server(Child);

impl Server {
    fn start(socket: &Path) -> Server {
        Server::with(socket, &[])
    }

    fn with(socket: &Path, flags: &[&str]) -> Server {
        let child = Command::new(KILN)
            .args(["serve", "--backend", "cpu", "--socket"])
            .arg(socket)
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while UnixStream::connect(socket).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(60), "the server never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_served_prove_is_the_local_prove() {
    let dir = tempfile::tempdir().unwrap();
    let socket: PathBuf = dir.path().join("kiln.sock");
    let server = Server::start(&socket);
    let sock = socket.to_str().unwrap();
    let fib = example("fibonacci.kasm");

    // Relative paths are the client's.
    let served = kiln(dir.path(), &["prove", &fib, "--input", "20", "--server", sock, "--out", "served.proof"]);
    assert!(served.status.success(), "{}", stderr(&served));
    let text = String::from_utf8_lossy(&served.stdout);
    assert!(text.contains("served.proof") && text.contains("verified"), "{text}");
    let local = kiln(dir.path(), &["prove", &fib, "--input", "20", "--out", "local.proof"]);
    assert!(local.status.success(), "{}", stderr(&local));
    let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
    assert!(read("served.proof") == read("local.proof"), "a served proof differs from the local one");
    let verified = kiln(dir.path(), &["verify", "served.proof"]);
    assert!(verified.status.success(), "{}", stderr(&verified));

    // KILN_SERVER stands for --server; --json comes back whole.
    let o = Command::new(KILN)
        .args(["prove", "--input", "7", "--json", "--out", "env.proof"])
        .current_dir(dir.path())
        .env("KILN_SERVER", &socket)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["backend"].as_str(), v["inputs"][0].as_u64()), (Some("cpu"), Some(7)));
    assert!(dir.path().join("env.proof").exists());

    // A failed prove is the client's error: one line, exit 1, no file.
    let o = kiln(dir.path(), &["prove", "missing.kasm", "--server", sock, "--out", "missing.proof"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.starts_with("error: cannot read `") && e.contains("missing.kasm"), "{e}");
    assert!(!dir.path().join("missing.proof").exists());
    // Bad flags fail as clap's usage errors do (exit 2); batches are not served.
    let o = kiln(dir.path(), &["prove", "--blowup", "3x", "--server", sock]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = kiln(dir.path(), &["prove", "--repeat", "2", "--server", sock]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("one program at a time"), "{}", stderr(&o));

    // The server is still there after all of that, and a second one is refused.
    let o = kiln(dir.path(), &["prove", "--input", "5", "--server", sock, "--out", "again.proof"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = kiln(dir.path(), &["serve", "--backend", "cpu", "--socket", sock]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already listens"), "{}", stderr(&o));

    // Killed, it is unreachable by name; its stale socket is replaced.
    drop(server);
    let o = kiln(dir.path(), &["prove", "--input", "5", "--server", sock, "--out", "gone.proof"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("error: cannot reach the kiln server at `"), "{}", stderr(&o));
    assert!(!dir.path().join("gone.proof").exists());
    let _server = Server::start(&socket);
    let o = kiln(dir.path(), &["prove", "--input", "5", "--server", sock, "--out", "back.proof"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// With `--jobs 2`, clients proving at once each get the proof a local
/// prove writes.
#[test]
fn proves_in_flight_at_once_are_each_the_local_proof() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kiln.sock");
    let _server = Server::with(&socket, &["--jobs", "2"]);
    let sock = socket.to_str().unwrap();
    let (fib, fact) = (example("fibonacci.kasm"), example("factorial.kasm"));
    let runs = [(&fib, "30", "fib"), (&fact, "12", "fact"), (&fib, "31", "fib31"), (&fact, "9", "fact9")];
    std::thread::scope(|s| {
        let clients: Vec<_> = runs
            .iter()
            .map(|(p, input, name)| {
                let out = format!("{name}.served.proof");
                let dir = dir.path();
                s.spawn(move || {
                    (kiln(dir, &["prove", p.as_str(), "--input", input, "--server", sock, "--out", &out]), out)
                })
            })
            .collect();
        for c in clients {
            let (o, out) = c.join().unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            // Each client gets its own prove's report, not another's.
            let text = String::from_utf8_lossy(&o.stdout);
            let proofs: Vec<&str> = text.lines().filter(|l| l.starts_with("proof ")).collect();
            assert!(proofs.len() == 1 && proofs[0].contains(&out), "{text}");
        }
    });
    for (p, input, name) in runs {
        let local = format!("{name}.local.proof");
        let o = kiln(dir.path(), &["prove", p.as_str(), "--input", input, "--out", &local]);
        assert!(o.status.success(), "{}", stderr(&o));
        let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
        assert!(read(&format!("{name}.served.proof")) == read(&local), "{name}: the served proof differs");
    }
}

#[test]
fn serve_never_replaces_a_file_that_is_not_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "keep me").unwrap();
    let o = kiln(dir.path(), &["serve", "--backend", "cpu", "--socket", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is not a socket"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}

/// A socket another user owns is not sent a run (its answer would be
/// printed as the prove's). Needs the right to give a file away (root);
/// elsewhere there is no such socket to make.
#[test]
fn a_socket_of_another_user_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("theirs.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    if std::os::unix::fs::chown(&socket, Some(65534), None).is_err() {
        eprintln!("not run: this user cannot give a file away");
        return;
    }
    let o = kiln(dir.path(), &["prove", "--input", "5", "--server", socket.to_str().unwrap(), "--out", "p.proof"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("belongs to user 65534"), "{}", stderr(&o));
    assert!(!dir.path().join("p.proof").exists());
}

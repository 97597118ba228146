//! The memory gate: one process-wide byte budget per device. Every
//! allocation-heavy stage of a device backend asks it to admit the bytes
//! the memory model (`crate::memory::stage_bytes`) gives for its shapes
//! before it allocates, and returns them when it ends, so concurrent tables
//! and concurrent proofs on one card do not over-commit it. A request waits
//! a bounded time for others to finish; it is then admitted or declined,
//! never left blocking. Shared by the CUDA and wgpu backends: a device is
//! named by a key such as `cuda:0`.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a request that fits the budget waits for others to release.
const MAX_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct State {
    budget: u64,
    used: u64,
    /// Requests that waited for room (counted once each).
    waits: u64,
}

/// The budget of one device ordinal.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<State>,
    released: Condvar,
}

/// Why a request was not admitted.
#[derive(Debug)]
pub struct Refusal {
    pub budget: u64,
    pub used: u64,
}

impl Gate {
    /// The gate of device `key`, created on first use with the budget
    /// given, else `default_budget`. A budget given later replaces the
    /// current one (the budget is per device, not per backend).
    pub fn for_device(key: &str, budget: Option<u64>, default_budget: u64) -> Arc<Gate> {
        static GATES: OnceLock<Mutex<HashMap<String, Arc<Gate>>>> = OnceLock::new();
        let mut gates = GATES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        let gate = gates
            .entry(key.to_string())
            .or_insert_with(|| {
                Arc::new(Gate {
                    state: Mutex::new(State { budget: budget.unwrap_or(default_budget), used: 0, waits: 0 }),
                    released: Condvar::new(),
                })
            })
            .clone();
        if let Some(b) = budget {
            gate.lock().budget = b;
            gate.released.notify_all();
        }
        gate
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The budget in bytes.
    pub fn budget(&self) -> u64 {
        self.lock().budget
    }

    /// Bytes admitted and not yet released.
    pub fn in_use(&self) -> u64 {
        self.lock().used
    }

    /// Requests that had to wait for other work to release memory.
    pub fn waits(&self) -> u64 {
        self.lock().waits
    }

    /// Admits `bytes` or refuses: at once when they exceed the whole
    /// budget, else after waiting at most [`MAX_WAIT`] for room.
    pub fn admit(self: &Arc<Self>, bytes: u64) -> Result<Permit, Refusal> {
        let deadline = Instant::now() + MAX_WAIT;
        let mut st = self.lock();
        let mut waited = false;
        loop {
            if bytes > st.budget {
                return Err(Refusal { budget: st.budget, used: st.used });
            }
            if st.used + bytes <= st.budget {
                st.used += bytes;
                return Ok(Permit { gate: self.clone(), bytes });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Refusal { budget: st.budget, used: st.used });
            }
            if !waited {
                waited = true;
                st.waits += 1;
            }
            st = self.released.wait_timeout(st, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// Admitted bytes, returned to the gate on drop.
pub struct Permit {
    gate: Arc<Gate>,
    bytes: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.used = st.used.saturating_sub(self.bytes);
        drop(st);
        self.gate.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_within_the_budget_and_refuses_past_it() {
        let g =
            Arc::new(Gate { state: Mutex::new(State { budget: 100, used: 0, waits: 0 }), released: Condvar::new() });
        let a = g.admit(60).expect("fits");
        assert_eq!(g.in_use(), 60);
        assert!(g.admit(101).is_err(), "larger than the budget: refused at once");
        // 60 + 50 > 100: waits, then the release lets it in.
        let g2 = g.clone();
        let t = std::thread::spawn(move || g2.admit(50).map(|p| p.bytes).ok());
        std::thread::sleep(Duration::from_millis(50));
        drop(a);
        assert_eq!(t.join().unwrap(), Some(50));
        assert_eq!(g.in_use(), 0);
        assert_eq!(g.waits(), 1, "the second request waited once");
    }
}

//! Example AIRs: small statements that exercise every feature of the
//! prover (transitions of degree 3, many columns, auxiliary columns from
//! challenges, several tables joined by a bus), used by tests, benchmarks
//! and the conformance suite.

use crate::air::{Air, Machine};
use backend_api::logup::{constrain, Interaction, LogUp};
use backend_api::{ColMatrix, ConstraintBuilder, ConstraintSystem, Expr, Ext, Layout, F};

/// A deterministic stream of non-zero-ish field elements for traces.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next_felt(&mut self) -> F {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::new(self.0 ^ (self.0 >> 29))
    }
}

/// Fibonacci: (a, b) -> (b, a + b); publics are `a[0]`, `b[0]` and `b[n-1]`.
pub struct Fibonacci {
    cs: ConstraintSystem,
}

impl Default for Fibonacci {
    fn default() -> Self {
        let mut b = ConstraintBuilder::new(Layout { main_width: 2, num_public: 3, ..Layout::default() });
        let (a0, b0, a1, b1) = (Expr::main(0, 0), Expr::main(1, 0), Expr::main(0, 1), Expr::main(1, 1));
        b.when_transition(&a1 - &b0);
        b.when_transition(&b1 - (&a0 + &b0));
        b.when_first_row(&a0 - Expr::public(0));
        b.when_first_row(&b0 - Expr::public(1));
        b.when_last_row(&b0 - Expr::public(2));
        Fibonacci { cs: b.build().expect("valid constraints") }
    }
}

impl Fibonacci {
    /// The trace of 2^log_n rows from (a, b), and the public inputs.
    pub fn trace(log_n: u32, a: F, b: F) -> (ColMatrix, Vec<F>) {
        let n = 1usize << log_n;
        let (mut xs, mut ys) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut x, mut y) = (a, b);
        for _ in 0..n {
            xs.push(x);
            ys.push(y);
            (x, y) = (y, x + y);
        }
        let last = ys[n - 1];
        (ColMatrix::from_columns(vec![xs, ys]), vec![a, b, last])
    }
}

impl Air for Fibonacci {
    fn name(&self) -> &str {
        "fibonacci"
    }
    fn constraints(&self) -> &ConstraintSystem {
        &self.cs
    }
}

/// A wide AIR with degree-3 transitions: x_i' = x_i^3 + x_(i+1) + i, the
/// shape of a hash round; public input is x_0 of the first row.
pub struct Cubic {
    width: usize,
    cs: ConstraintSystem,
}

impl Cubic {
    pub fn new(width: usize) -> Cubic {
        assert!(width >= 2, "the cubic AIR needs two columns");
        let mut b = ConstraintBuilder::new(Layout { main_width: width, num_public: 1, ..Layout::default() });
        for i in 0..width {
            let x = Expr::main(i, 0);
            let cube = &x * &x * &x;
            b.when_transition(Expr::main(i, 1) - (cube + Expr::main((i + 1) % width, 0) + i as u64));
        }
        b.when_first_row(Expr::main(0, 0) - Expr::public(0));
        Cubic { width, cs: b.build().expect("valid constraints") }
    }

    pub fn trace(&self, log_n: u32, seed: u64) -> (ColMatrix, Vec<F>) {
        // Rows are made one after another into a row-major tile, and each
        // tile is written out column by column (wide traces of 2^20+ rows
        // would otherwise write hundreds of column streams per row).
        const TILE: usize = 64;
        let n = 1usize << log_n;
        let w = self.width;
        let mut rng = Lcg(seed);
        let mut row: Vec<F> = (0..w).map(|_| rng.next_felt()).collect();
        let mut next = vec![F::ZERO; w];
        let mut data = vec![F::ZERO; n * w];
        let mut tile = vec![F::ZERO; TILE * w];
        for r0 in (0..n).step_by(TILE) {
            let rows = TILE.min(n - r0);
            for t in 0..rows {
                tile[t * w..(t + 1) * w].copy_from_slice(&row);
                for i in 0..w {
                    next[i] = row[i] * row[i] * row[i] + row[(i + 1) % w] + F::new(i as u64);
                }
                std::mem::swap(&mut row, &mut next);
            }
            for c in 0..w {
                for t in 0..rows {
                    data[c * n + r0 + t] = tile[t * w + c];
                }
            }
        }
        let first = data[0];
        (ColMatrix::new(w, n, data), vec![first])
    }
}

impl Air for Cubic {
    fn name(&self) -> &str {
        "cubic"
    }
    fn constraints(&self) -> &ConstraintSystem {
        &self.cs
    }
}

/// Column b is a permutation of column a, shown with a LogUp sum over the
/// challenges z and alpha: sum 1/(z - alpha a_i) - 1/(z - alpha b_i) = 0.
/// Auxiliary columns: inv_a, inv_b, the running sum; the total is an
/// auxiliary value the machine requires to be zero.
pub struct Permutation {
    cs: ConstraintSystem,
    logup: LogUp,
}

/// Challenge indices of every example bus.
const Z: usize = 0;
const ALPHA: usize = 1;

/// The constraints and the compiled interactions of a table whose only
/// constraints are its LogUp bus (`at(offset)` reads rows at that offset).
fn bus_table(main_width: usize, at: &dyn Fn(usize) -> Vec<Interaction>) -> (ConstraintSystem, LogUp) {
    let layout =
        Layout { main_width, aux_width: at(0).len() + 1, num_challenges: 2, num_aux_values: 1, ..Layout::default() };
    let mut b = ConstraintBuilder::new(layout);
    constrain(&mut b, at, Z, ALPHA);
    let logup = LogUp::new(layout, at(0), Z, ALPHA).expect("valid interactions");
    (b.build().expect("valid constraints"), logup)
}

impl Default for Permutation {
    fn default() -> Self {
        let at = |off| {
            vec![
                Interaction { tag: 0, values: vec![Expr::main(0, off)], mult: Expr::one() },
                Interaction { tag: 0, values: vec![Expr::main(1, off)], mult: -Expr::one() },
            ]
        };
        let (cs, logup) = bus_table(2, &at);
        Permutation { cs, logup }
    }
}

impl Permutation {
    pub fn trace(log_n: u32, seed: u64) -> ColMatrix {
        let n = 1usize << log_n;
        let mut rng = Lcg(seed);
        let a: Vec<F> = (0..n).map(|_| rng.next_felt()).collect();
        // A fixed-point-free rotation plus a swap keeps it a permutation.
        let mut b: Vec<F> = (0..n).map(|i| a[(i * 5 + 3) % n]).collect();
        if n >= 2 {
            b.swap(0, n - 1);
        }
        ColMatrix::from_columns(vec![a, b])
    }
}

impl Air for Permutation {
    fn name(&self) -> &str {
        "permutation"
    }
    fn constraints(&self) -> &ConstraintSystem {
        &self.cs
    }
    fn logup(&self) -> Option<&LogUp> {
        Some(&self.logup)
    }
}

impl Machine for Permutation {
    fn tables(&self) -> Vec<&dyn Air> {
        vec![self]
    }
    fn num_challenges(&self) -> usize {
        2
    }
    fn check_aux_values(&self, _publics: &[F], _challenges: &[Ext], aux_values: &[Vec<Ext>]) -> Result<(), String> {
        match aux_values.first().and_then(|v| v.first()) {
            Some(v) if v.is_zero() => Ok(()),
            _ => Err("the permutation's LogUp sum is not zero".into()),
        }
    }
}

/// One side of a bus: a LogUp sum of m_i / (z - alpha v_i) over its rows,
/// where column 0 holds v and (for the receiver) column 1 holds m.
pub struct BusSide {
    name: &'static str,
    cs: ConstraintSystem,
    logup: LogUp,
}

impl BusSide {
    fn new(name: &'static str, with_multiplicity: bool) -> BusSide {
        let width = if with_multiplicity { 2 } else { 1 };
        let at = |off| {
            let mult = if with_multiplicity { Expr::main(1, off) } else { Expr::one() };
            vec![Interaction { tag: 0, values: vec![Expr::main(0, off)], mult }]
        };
        let (cs, logup) = bus_table(width, &at);
        BusSide { name, cs, logup }
    }
}

impl Air for BusSide {
    fn name(&self) -> &str {
        self.name
    }
    fn constraints(&self) -> &ConstraintSystem {
        &self.cs
    }
    fn logup(&self) -> Option<&LogUp> {
        Some(&self.logup)
    }
}

/// Two tables of different heights joined by a bus: every value the
/// sender emits is in the receiver's table, counted by its multiplicity.
pub struct TwoTables {
    sender: BusSide,
    receiver: BusSide,
}

impl Default for TwoTables {
    fn default() -> Self {
        TwoTables { sender: BusSide::new("sender", false), receiver: BusSide::new("receiver", true) }
    }
}

impl TwoTables {
    /// Sender of 2^log_n rows drawing from 2^(log_n - 2) distinct values,
    /// each sent at least once: a receiver row nothing is sent to would be
    /// a witness cell no constraint binds.
    pub fn traces(log_n: u32, seed: u64) -> Vec<ColMatrix> {
        let n = 1usize << log_n;
        let k = (n / 4).max(1);
        let mut rng = Lcg(seed);
        let values: Vec<F> = (0..k).map(|_| rng.next_felt()).collect();
        let mut mult = vec![0u64; k];
        let sent: Vec<F> = (0..n)
            .map(|i| {
                let j = if i < k { i } else { (rng.next_felt().value() % k as u64) as usize };
                mult[j] += 1;
                values[j]
            })
            .collect();
        vec![
            ColMatrix::from_columns(vec![sent]),
            ColMatrix::from_columns(vec![values, mult.into_iter().map(F::new).collect()]),
        ]
    }
}

impl Machine for TwoTables {
    fn tables(&self) -> Vec<&dyn Air> {
        vec![&self.sender, &self.receiver]
    }
    fn num_challenges(&self) -> usize {
        2
    }
    fn check_aux_values(&self, _publics: &[F], _challenges: &[Ext], aux_values: &[Vec<Ext>]) -> Result<(), String> {
        match (aux_values.first().and_then(|v| v.first()), aux_values.get(1).and_then(|v| v.first())) {
            (Some(a), Some(b)) if a == b => Ok(()),
            _ => Err("the bus between sender and receiver does not balance".into()),
        }
    }
}

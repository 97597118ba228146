//! The suite's result: one row per (operation, shape) case, rendered as a
//! summary table.

use std::fmt;

/// One compared case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The operation and its parameters ("coset_lde x4", "commit keccak").
    pub op: String,
    /// Rows of the main input ("2^10", "3" for invalid shapes, "-").
    pub rows: String,
    /// Columns of the main input, or another second dimension.
    pub cols: String,
    /// `Err(why)` when the backend differed from the reference.
    pub outcome: Result<(), String>,
}

impl Case {
    pub fn passed(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// Every case the suite ran for one backend, in run order.
#[derive(Clone, Debug, Default)]
pub struct SuiteReport {
    /// The backend under test, as it names itself.
    pub backend: String,
    /// The base seed every case's inputs derive from.
    pub seed: u64,
    pub cases: Vec<Case>,
}

impl SuiteReport {
    pub fn new(backend: &str, seed: u64) -> SuiteReport {
        SuiteReport { backend: backend.to_string(), seed, cases: Vec::new() }
    }

    pub fn push(
        &mut self,
        op: impl Into<String>,
        rows: impl Into<String>,
        cols: impl Into<String>,
        outcome: Result<(), String>,
    ) {
        self.cases.push(Case { op: op.into(), rows: rows.into(), cols: cols.into(), outcome });
    }

    pub fn merge(&mut self, other: SuiteReport) {
        self.cases.extend(other.cases);
    }

    pub fn passed(&self) -> bool {
        self.cases.iter().all(Case::passed)
    }

    pub fn failures(&self) -> impl Iterator<Item = &Case> {
        self.cases.iter().filter(|c| !c.passed())
    }

    /// Panics listing every failing case (with how to reproduce it) when
    /// any case failed.
    pub fn assert_passed(&self) {
        if self.passed() {
            return;
        }
        let mut msg = format!(
            "{} of {} conformance cases failed on backend '{}' (base seed {:#x}; rerun with KILN_CONFORMANCE_SEED={:#x}):\n",
            self.failures().count(),
            self.cases.len(),
            self.backend,
            self.seed,
            self.seed
        );
        for c in self.failures() {
            msg.push_str(&format!(
                "  {} [{} x {}]: {}\n",
                c.op,
                c.rows,
                c.cols,
                c.outcome.as_ref().err().map(String::as_str).unwrap_or("")
            ));
        }
        panic!("{msg}");
    }
}

/// Consecutive cases of one operation, height and outcome are printed on
/// one line with their widths joined, so the table stays readable.
impl fmt::Display for SuiteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Line {
            op: String,
            rows: String,
            cols: Vec<String>,
            result: String,
        }
        let mut lines: Vec<Line> = Vec::new();
        for c in &self.cases {
            let result = match &c.outcome {
                Ok(()) => "pass".to_string(),
                Err(e) => format!("FAIL: {e}"),
            };
            match lines.last_mut() {
                Some(l) if l.op == c.op && l.rows == c.rows && l.result == "pass" && result == "pass" => {
                    if !l.cols.contains(&c.cols) {
                        l.cols.push(c.cols.clone());
                    }
                }
                _ => lines.push(Line { op: c.op.clone(), rows: c.rows.clone(), cols: vec![c.cols.clone()], result }),
            }
        }
        let shape = |l: &Line| format!("{} x {}", l.rows, l.cols.join(","));
        let w_op = lines.iter().map(|l| l.op.len()).max().unwrap_or(0).max("operation".len());
        let w_shape = lines.iter().map(|l| shape(l).len()).max().unwrap_or(0).max("shape (rows x cols)".len());
        writeln!(f, "conformance: backend '{}' against cpu, base seed {:#x}", self.backend, self.seed)?;
        writeln!(f, "{:<w_op$}  {:<w_shape$}  result", "operation", "shape (rows x cols)")?;
        writeln!(f, "{}  {}  ------", "-".repeat(w_op), "-".repeat(w_shape))?;
        for l in &lines {
            writeln!(f, "{:<w_op$}  {:<w_shape$}  {}", l.op, shape(l), l.result)?;
        }
        let failed = self.failures().count();
        write!(f, "{} cases: {} passed, {} failed", self.cases.len(), self.cases.len() - failed, failed)
    }
}

//! The suite itself catches a wrong backend: the failing cases name the
//! operation and shape, print their seed, and property failures shrink to
//! the smallest failing input.

mod common;

use backend_api::Stage;
use common::Corrupting;
use conformance::{run_group, Group, SuiteConfig};

fn config() -> SuiteConfig {
    SuiteConfig { prop_cases: 16, ..SuiteConfig::with_max_log(8) }
}

#[test]
fn a_wrong_lde_element_fails_exactly_the_lde_cases_that_hold_it() {
    // Row 40 exists only in LDEs of at least 64 rows.
    let b = Corrupting::new(Stage::CosetLde, None, 0, 40);
    let report = run_group(&b, &config(), Group::Lde);
    assert!(!report.passed());
    for c in &report.cases {
        let rows = 1usize << c.rows.trim_start_matches("2^").parse::<u32>().unwrap();
        // The identity case compares the backend with itself, both sides
        // corrupted alike; the cases against the reference catch it.
        // A fold's output has rows / F rows; the fold tie reads the
        // corrupted row at different places on its two sides.
        let lde_blowup = ["coset_lde x", "coset_ntt x", "upload_coset_lde x"].iter().find_map(|p| c.op.strip_prefix(p));
        let out_rows = if let Some(blowup) = lde_blowup {
            rows * blowup.parse::<usize>().unwrap()
        } else if let Some(fold) = c.op.strip_prefix("fold_coeffs /") {
            rows / fold.parse::<usize>().unwrap()
        } else if let Some(stride) = c.op.strip_prefix("stride_rows /") {
            rows / stride.parse::<usize>().unwrap()
        } else if let Some(k) = c.op.strip_prefix("coset_rows of ") {
            // k positions, then both ends and a repeat.
            k.parse::<usize>().unwrap() + 3
        } else if c.op.starts_with("interleave(stride_rows") {
            // The interleave's own output is wrong at row 40.
            rows
        } else if c.op.starts_with("coset_ntt(fold_coeffs(x))") {
            continue;
        } else {
            assert!(c.passed() && c.op.starts_with("coset_ntt(intt(x))"), "{c:?}");
            continue;
        };
        assert_eq!(c.passed(), out_rows <= 40, "{c:?}");
        if let Err(e) = &c.outcome {
            assert!(e.starts_with("column 0, row 40:") && e.contains("case seed 0x"), "{e}");
        }
    }
    let table = report.to_string();
    assert!(table.contains("FAIL: column 0, row 40") && table.ends_with("failed"), "{table}");
    // In the Merkle group, only the extensions made by `upload_commit`.
    for c in &run_group(&b, &config(), Group::Merkle).cases {
        let rows = 1usize << c.rows.trim_start_matches("2^").parse::<u32>().unwrap();
        let blowup = c.op.strip_prefix("upload_commit ").and_then(|s| s.split(" x").nth(1));
        let out_rows = blowup.map_or(0, |b| rows * b.parse::<usize>().unwrap());
        assert_eq!(c.passed(), out_rows <= 40, "{c:?}");
    }
    // Other groups are unaffected.
    assert!(run_group(&b, &config(), Group::Fri).passed());
}

#[test]
fn a_property_failure_shrinks_to_the_smallest_input() {
    // Wrong from 2^5 rows on: the shrunk input is 2^5 rows, 1 column, seed 0.
    let b = Corrupting::new(Stage::Ntt, None, 0, 31);
    let report = run_group(&b, &config(), Group::Properties);
    let failure = report.failures().next().expect("the property fails");
    let msg = failure.outcome.as_ref().unwrap_err();
    assert!(
        msg.starts_with("minimal failing input (log_rows, width, seed) = (5, 1, 0): ntt: column 0, row 31"),
        "{msg}"
    );
}

#[test]
fn a_wrong_compose_fails_every_proof_but_no_error_case() {
    // Errors come from shared validation, before the corrupted output.
    let b = Corrupting::new(Stage::Compose, None, 0, 0);
    assert!(run_group(&b, &config(), Group::Errors).passed());
    let report = run_group(&b, &config(), Group::Proofs);
    assert!(report.cases.iter().all(|c| !c.passed()), "{report}");
}

#[test]
fn a_wrong_leaf_digest_fails_its_merkle_cases_and_every_recomputed_proof() {
    // The digest of row 3: commits (their own leaves) are unaffected.
    let b = Corrupting::new(Stage::MerkleCommit, None, 0, 3);
    let report = run_group(&b, &config(), Group::Merkle);
    for c in &report.cases {
        let rows = 1usize << c.rows.trim_start_matches("2^").parse::<u32>().unwrap();
        let leaves = c.op.starts_with("leaf_digests");
        assert_eq!(c.passed(), !leaves || rows <= 3, "{c:?}");
    }
    // Recomputed trees are built from leaf digests; kept ones are not.
    let report = run_group(&b, &config(), Group::Proofs);
    let recomputed: Vec<_> = report.cases.iter().filter(|c| c.op.contains("recomputed")).collect();
    assert!(!recomputed.is_empty() && recomputed.iter().all(|c| !c.passed()), "{report}");
    assert!(report.cases.iter().filter(|c| c.op == "prove cubic16 blake3").all(|c| c.passed()), "{report}");
}

#[test]
fn a_wrong_gathered_row_fails_its_merkle_cases() {
    // The second row asked for, column 0: openings are unaffected.
    let b = Corrupting::new(Stage::MerkleOpen, None, 0, 1);
    let report = run_group(&b, &config(), Group::Merkle);
    for c in &report.cases {
        assert_eq!(c.passed(), !c.op.starts_with("leaf_digests"), "{c:?}");
    }
}

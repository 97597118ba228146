//! The Goldilocks operations that `field.cuh` writes as PTX carry chains,
//! run on the host by a small interpreter of the PTX they contain and
//! compared with 128-bit integer arithmetic; likewise `keccak.cuh`'s
//! three-input XOR. CI has no GPU; this checks the exact asm text the
//! device compiles, on edge values and random inputs.

use std::collections::HashMap;

use kernels_cuda::{FIELD_H, KECCAK_H};

const P: u64 = 0xFFFF_FFFF_0000_0001;

/// The PTX lines of the asm block in the device function `name`.
fn asm_block(name: &str) -> Vec<String> {
    asm_blocks(name).swap_remove(0)
}

/// The PTX lines of each asm block in `field.cuh`'s device function
/// `name`, in source order (a function may pick one by a constant
/// argument).
fn asm_blocks(name: &str) -> Vec<Vec<String>> {
    asm_blocks_in(FIELD_H, name)
}

/// The same for a function of the header text `header`.
fn asm_blocks_in(header: &str, name: &str) -> Vec<Vec<String>> {
    let start = header.find(&format!(" {name}(")).unwrap_or_else(|| panic!("{name} not found"));
    let body = &header[start..];
    let body = &body[..body.find("\n}\n").expect("no end of function")];
    let mut blocks = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find("asm(") {
        let asm = &rest[at..];
        let end = asm.find("\n        :").or_else(|| asm.find("\n            :")).expect("no operands");
        blocks.push(ptx_lines(&asm[..end]));
        rest = &asm[end..];
    }
    assert!(!blocks.is_empty(), "no asm block in {name}");
    blocks
}

/// The statements of an asm block's string literals.
fn ptx_lines(asm: &str) -> Vec<String> {
    // Concatenate the string literals, then split the PTX into statements.
    let mut text = String::new();
    let mut rest = asm;
    while let Some(open) = rest.find('"') {
        let close = open + 1 + rest[open + 1..].find('"').expect("unterminated literal");
        text.push_str(&rest[open + 1..close]);
        rest = &rest[close + 1..];
    }
    text.replace("\\n", "\n")
        .replace("\\t", "")
        .split(['\n', ';'])
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "{" && s != "}" && !s.starts_with(".reg"))
        .collect()
}

/// Runs PTX `lines` with `%1 = a`, `%2 = b` and returns `%0`.
fn run(lines: &[String], a: u64, b: u64) -> u64 {
    exec(lines, &[("%1", a), ("%2", b)])["%0"]
}

/// Runs PTX `lines` from the operand values `ops`; returns every register.
fn exec(lines: &[String], ops: &[(&str, u64)]) -> HashMap<String, u64> {
    let mut regs: HashMap<String, u64> = ops.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    let mut carry = 0u64;
    for line in lines {
        let (op, args) = line.split_once(char::is_whitespace).unwrap_or_else(|| panic!("bad line {line}"));
        if op == "mov.b64" {
            if let Some(pair) = args.strip_prefix('{') {
                // {lo, hi}, %n: unpack.
                let (pair, src) = pair.split_once('}').unwrap();
                let (lo, hi) = pair.split_once(',').unwrap();
                let v = regs[src.trim_start_matches(',').trim()];
                regs.insert(lo.trim().into(), v & 0xFFFF_FFFF);
                regs.insert(hi.trim().into(), v >> 32);
            } else {
                // %0, {lo, hi}: pack.
                let (dst, pair) = args.split_once(',').unwrap();
                let (lo, hi) = pair.trim().trim_matches(['{', '}']).split_once(',').unwrap();
                let v = regs[lo.trim()] | (regs[hi.trim()] << 32);
                regs.insert(dst.trim().into(), v);
            }
            continue;
        }
        let ops: Vec<&str> = args.split(',').map(str::trim).collect();
        let val = |s: &str, regs: &HashMap<String, u64>| -> u64 {
            if let Some(v) = regs.get(s) {
                *v
            } else if let Some(hex) = s.strip_prefix("0x") {
                u64::from_str_radix(hex, 16).unwrap() & 0xFFFF_FFFF
            } else {
                s.parse::<u64>().unwrap_or_else(|_| panic!("unknown operand {s} in {line}"))
            }
        };
        let src: Vec<u64> = ops[1..].iter().map(|s| val(s, &regs)).collect();
        let parts: Vec<&str> = op.split('.').collect();
        let sets_cc = parts.contains(&"cc");
        // Every operation here is on 32-bit words but those typed 64-bit.
        let bits = if parts.iter().any(|p| p.ends_with("64")) { 64 } else { 32 };
        let mask = if bits == 64 { u64::MAX } else { 0xFFFF_FFFF };
        let product = |x: u64, y: u64| if parts.contains(&"hi") { (x * y) >> 32 } else { (x * y) & 0xFFFF_FFFF };
        // A shift count past the word shifts everything out (clamp).
        let shift = |n: u64| n.min(32) as u32;
        // Results as i128 so borrows show as negatives.
        let wide: i128 = match parts[0] {
            "mul" => product(src[0], src[1]) as i128,
            "mad" => (product(src[0], src[1]) + src[2]) as i128,
            "madc" => (product(src[0], src[1]) + src[2] + carry) as i128,
            "add" => src[0] as i128 + src[1] as i128,
            "addc" => src[0] as i128 + src[1] as i128 + carry as i128,
            "sub" => src[0] as i128 - src[1] as i128,
            "subc" => src[0] as i128 - src[1] as i128 - carry as i128,
            "neg" => -(src[0] as i128),
            "not" => (!src[0] & mask) as i128,
            "cvt" => {
                assert_eq!(op, "cvt.u64.u32", "unsupported {line}");
                src[0] as i128
            }
            "shl" => ((src[0] << shift(src[1])) & 0xFFFF_FFFF) as i128,
            "shr" => (src[0] >> shift(src[1])) as i128,
            // Funnel shifts of the pair hi:lo = src[1]:src[0].
            "shf" => {
                assert!(parts.contains(&"clamp") && bits == 32, "unsupported {line}");
                let pair = src[1] << 32 | src[0];
                let n = shift(src[2]);
                if parts.contains(&"l") {
                    ((pair << n) >> 32) as i128
                } else {
                    ((pair >> n) & 0xFFFF_FFFF) as i128
                }
            }
            "setp" => {
                assert_eq!(op, "setp.ne.u32", "unsupported {line}");
                regs.insert(ops[0].into(), u64::from(src[0] != src[1]));
                continue;
            }
            // Any three-input function by its truth table: bit i of the
            // result is bit (a_i b_i c_i, as a binary number) of the table.
            "lop3" => {
                let table = src[3];
                let bit = |i: u32| (table >> ((src[0] >> i & 1) << 2 | (src[1] >> i & 1) << 1 | (src[2] >> i & 1))) & 1;
                (0..32).fold(0u64, |word, i| word | bit(i) << i) as i128
            }
            "selp" => {
                let v = if src[2] != 0 { src[0] } else { src[1] };
                regs.insert(ops[0].into(), v);
                continue;
            }
            _ => panic!("unsupported instruction {line}"),
        };
        if sets_cc {
            carry = if parts[0].starts_with("sub") { u64::from(wide < 0) } else { (wide >> bits) as u64 };
        }
        regs.insert(ops[0].into(), (wide as u64) & mask);
    }
    regs
}

/// Edge values and random draws, canonical or not.
fn inputs(canonical: bool) -> Vec<(u64, u64)> {
    let mut edges = vec![0, 1, 2, P - 1, P - 2, 0xFFFF_FFFF, 1 << 32, (1 << 32) + 1, 1 << 63, P - (1 << 32)];
    edges.extend([0xFFFF_FFFE_0000_0000, 0xFFFF_FFFE_FFFF_FFFF, (P - 1) / 2, 0x0000_0001_FFFF_FFFF]);
    if !canonical {
        edges.extend([P, P + 1, u64::MAX, u64::MAX - 1, 0xFFFF_FFFF_FFFF_0000]);
    }
    let mut out: Vec<(u64, u64)> = edges.iter().flat_map(|&a| edges.iter().map(move |&b| (a, b))).collect();
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in 0..100_000u64 {
        // Draws near 0, near p and near 2^32 multiples reach the rare carries.
        let mut draw = |k: u64| {
            let r = next();
            let v = match (i + k) % 4 {
                0 => r,
                1 => P.wrapping_sub(1 + (r >> 30)),
                2 => r >> 30,
                _ => r & 0xFFFF_FFFF_0000_0000 | (r >> 62),
            };
            if canonical {
                v % P
            } else {
                v
            }
        };
        out.push((draw(0), draw(1)));
    }
    out
}

fn check(name: &str, canonical: bool, reference: impl Fn(u64, u64) -> u64) {
    let lines = asm_block(name);
    assert!(lines.len() >= 5, "{name}: {lines:?}");
    let mut bad = Vec::new();
    for (a, b) in inputs(canonical) {
        let got = run(&lines, a, b);
        if got != reference(a, b) {
            bad.push((a, b, got));
        }
    }
    assert!(bad.is_empty(), "{name}: {} wrong, first {:x?}", bad.len(), &bad[..bad.len().min(4)]);
}

#[test]
fn f_mul_asm_is_the_canonical_product_of_any_words() {
    check("f_mul", false, |a, b| ((a as u128 * b as u128) % P as u128) as u64);
}

#[test]
fn f_add_asm_is_the_canonical_sum() {
    check("f_add", true, |a, b| ((a as u128 + b as u128) % P as u128) as u64);
}

#[test]
fn f_sub_asm_is_the_canonical_difference() {
    check("f_sub", true, |a, b| ((a as u128 + P as u128 - b as u128) % P as u128) as u64);
}

#[test]
fn f_shl_asm_is_the_canonical_product_by_a_power_of_two() {
    // One block for each third of 0 < e < 96, given e less its start.
    let blocks = asm_blocks("f_shl");
    assert_eq!(blocks.len(), 3);
    let xs: Vec<u64> = inputs(false).into_iter().take(12_000).flat_map(|(a, b)| [a, b]).collect();
    for e in 1..96u32 {
        let (block, base) = (&blocks[e as usize / 32], 32 * (e / 32));
        let pow = (0..e).fold(1u128, |r, _| r * 2 % P as u128);
        for &x in &xs {
            let got = exec(block, &[("%1", x), ("%2", (e - base) as u64)])["%0"];
            assert_eq!(got as u128, x as u128 * pow % P as u128, "x = {x:#x}, e = {e}");
        }
    }
}

#[test]
fn f_add_lazy_asm_is_congruent_to_the_sum() {
    let lines = asm_block("f_add_lazy");
    for (a, b) in inputs(true) {
        let got = run(&lines, a, b);
        assert_eq!(got as u128 % P as u128, (a as u128 + b as u128) % P as u128, "{a:#x} + {b:#x}");
    }
}

#[test]
fn f_acc_sums_of_products_reduce_to_the_field_sum() {
    let (madd, fold) = (asm_block("f_acc_madd"), asm_block("f_acc_reduce"));
    let sub = asm_block("f_sub");
    let pairs = inputs(false);
    // Sums of 1, 2, 3, ... 5000 terms (the rare carries need long runs of
    // large products), then one of 100,000 terms.
    let mut lens: Vec<usize> = (1..=40).collect();
    lens.extend([1000, 5000, 100_000]);
    let mut at = 0;
    for len in lens {
        // Operands: %0 lo, %1 hi, %2 mid (64-bit), %3 top, %4 mtop (32-bit).
        let mut acc = [0u64; 5];
        let mut want = 0u128;
        for k in 0..len {
            let (x, y) = pairs[(at + k) % pairs.len()];
            let names = ["%0", "%1", "%2", "%3", "%4"];
            let mut ops: Vec<(&str, u64)> = names.iter().copied().zip(acc).collect();
            ops.extend([("%5", x), ("%6", y)]);
            let r = exec(&madd, &ops);
            acc = names.map(|n| r[n]);
            want = (want + (x as u128 * y as u128) % P as u128) % P as u128;
        }
        at += len;
        let r = exec(&fold, &[("%3", acc[0]), ("%4", acc[1]), ("%5", acc[2]), ("%6", acc[3]), ("%7", acc[4])]);
        // The C tail: f_sub(f_reduce128(lo, hi), top << 32).
        let (lo, hi, top) = (r["%0"], r["%1"], r["%2"]);
        assert!(top < 1 << 32, "top {top:x} after {len} terms");
        let reduced = (((hi as u128) << 64 | lo as u128) % P as u128) as u64;
        let got = run(&sub, reduced, top << 32);
        assert_eq!(got as u128, want, "sum of {len} products");
    }
}

#[test]
fn the_interpreter_sees_a_dropped_carry() {
    // The same product with its final carry fold removed must disagree.
    let lines: Vec<String> = asm_block("f_mul").into_iter().filter(|l| l != "addc.u32 c, c, 0").collect();
    let wrong = inputs(false)
        .into_iter()
        .filter(|&(a, b)| run(&lines, a, b) != ((a as u128 * b as u128) % P as u128) as u64)
        .count();
    assert!(wrong > 0);
}

#[test]
fn the_interpreter_sees_a_dropped_borrow_fix_in_f_shl() {
    // The top third's product with its borrow fix removed must disagree.
    let block: Vec<String> =
        asm_blocks("f_shl").swap_remove(2).into_iter().filter(|l| l != "sub.cc.u32 t0, t0, m").collect();
    let pow = (1u128 << 72) % P as u128;
    let wrong = inputs(false)
        .into_iter()
        .filter(|&(x, _)| exec(&block, &[("%1", x), ("%2", 8)])["%0"] as u128 != x as u128 * pow % P as u128)
        .count();
    assert!(wrong > 0);
}

#[test]
fn keccak_xor3_asm_is_the_xor_of_its_three_words() {
    let lines = asm_blocks_in(KECCAK_H, "k_xor3").swap_remove(0);
    // The low halves of a, b, c in %2-%4, the high in %5-%7; the result's
    // low half in %0, its high in %1. The function's operand lists and its
    // return must say the same.
    let f = &KECCAK_H[KECCAK_H.find(" k_xor3(").expect("k_xor3 in keccak.cuh")..];
    let f = &f[..f.find("\n}\n").expect("end of k_xor3")];
    for binding in [
        r#": "=r"(lo), "=r"(hi)"#,
        r#": "r"((u32)a), "r"((u32)b), "r"((u32)c), "r"((u32)(a >> 32)), "r"((u32)(b >> 32)), "r"((u32)(c >> 32)));"#,
        "return ((u64)hi << 32) | lo;",
    ] {
        assert!(f.contains(binding), "k_xor3 no longer binds its operands as this test does: {binding}");
    }
    let lo = |v: u64| v & 0xFFFF_FFFF;
    let mut bad = Vec::new();
    for (i, (a, b)) in inputs(false).into_iter().enumerate() {
        let c = a.rotate_left(i as u32 % 64) ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let ops = [("%2", lo(a)), ("%3", lo(b)), ("%4", lo(c)), ("%5", a >> 32), ("%6", b >> 32), ("%7", c >> 32)];
        let regs = exec(&lines, &ops);
        let got = regs["%1"] << 32 | regs["%0"];
        if got != a ^ b ^ c {
            bad.push((a, b, c, got));
        }
    }
    assert!(bad.is_empty(), "k_xor3: {} wrong, first {:x?}", bad.len(), &bad[..bad.len().min(4)]);
}

#[test]
fn the_interpreter_reads_a_lop3_truth_table() {
    // Chi's a ^ (~b & c) is table 0xD2; majority is 0xE8.
    let chi = vec!["lop3.b32 %0, %1, %2, %3, 0xD2".to_string()];
    let maj = vec!["lop3.b32 %0, %1, %2, %3, 0xE8".to_string()];
    let (a, b, c) = (0xF0F0_1234u64, 0xFF00_ABCDu64, 0x0FF0_5A5Au64);
    let ops = [("%1", a), ("%2", b), ("%3", c)];
    assert_eq!(exec(&chi, &ops)["%0"], a ^ (!b & c & 0xFFFF_FFFF));
    assert_eq!(exec(&maj, &ops)["%0"], (a & b) | (a & c) | (b & c));
}

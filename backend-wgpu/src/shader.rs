//! WGSL sources: the field library in front of every kernel, over the
//! core the adapter can run (64-bit or 32-bit integers), and the readers that let one kernel
//! read a matrix split across several buffers.

use std::fmt::Write;

pub(crate) const FIELD: &str = include_str!("shaders/field.wgsl");
const FIELD32: &str = include_str!("shaders/field32.wgsl");
const FIELD64: &str = include_str!("shaders/field64.wgsl");
pub(crate) const NTT: &str = include_str!("shaders/ntt.wgsl");
pub(crate) const MERKLE: &str = include_str!("shaders/merkle.wgsl");
pub(crate) const BLAKE3: &str = include_str!("shaders/blake3.wgsl");
pub(crate) const KECCAK: &str = include_str!("shaders/keccak.wgsl");
pub(crate) const COMMON: &str = include_str!("shaders/common.wgsl");

/// The field library over its core: 64-bit shader integers where the
/// device has them (`int64`), else two u32 limbs.
pub(crate) fn field(int64: bool) -> String {
    let core = if int64 { FIELD64 } else { FIELD32 };
    format!("{core}\n{FIELD}")
}

/// A complete kernel: field library, then `body` (with `TILE` replaced by
/// the workgroup tile size and `// COMMON` by the shared helpers).
pub(crate) fn kernel(int64: bool, body: &str, tile: u32) -> String {
    let mut s = field(int64);
    s.push('\n');
    s.push_str(&body.replace("TILE", &tile.to_string()).replace("// COMMON\n", COMMON));
    s
}

/// Bindings `first..first + count` holding the buffers of matrix `name`
/// (read-only), and `fn ld_{name}(col, row)` reading its element: column
/// `col` lives in buffer `col / cpb` at word `(col % cpb) * height`, with
/// `cpb` and `height` given as the push-constant fields `{name}_cpb` and
/// `{name}_h`.
pub(crate) fn reader(name: &str, first: u32, count: u32) -> String {
    reader_shaped_as(name, name, first, count)
}

/// [`reader`] for a matrix laid out as matrix `shape` (its push-constant
/// fields `{shape}_cpb` and `{shape}_h`).
pub(crate) fn reader_shaped_as(name: &str, shape: &str, first: u32, count: u32) -> String {
    let mut s = String::new();
    for b in 0..count {
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> {name}{b}: array<vec2<u32>>;", first + b);
    }
    let _ = writeln!(s, "fn ld_{name}(col: u32, row: u32) -> vec2<u32> {{");
    if count == 1 {
        let _ = writeln!(s, "    return {name}0[col * pc.{shape}_h + row];\n}}");
        return s;
    }
    let _ = writeln!(
        s,
        "    let b = col / pc.{shape}_cpb;\n    let i = (col - b * pc.{shape}_cpb) * pc.{shape}_h + row;\n    switch b {{"
    );
    for b in 0..count - 1 {
        let _ = writeln!(s, "        case {b}u: {{ return {name}{b}[i]; }}");
    }
    let _ = writeln!(s, "        default: {{ return {name}{}[i]; }}\n    }}\n}}", count - 1);
    s
}

/// Bindings `first..first + count` holding the buffers of matrix `name`
/// (writable), and `fn st_{name}(col, row, v)` storing an element (the
/// layout of [`reader`]).
pub(crate) fn writer(name: &str, first: u32, count: u32) -> String {
    let mut s = String::new();
    for b in 0..count {
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read_write> {name}{b}: array<vec2<u32>>;", first + b);
    }
    let _ = writeln!(s, "fn st_{name}(col: u32, row: u32, v: vec2<u32>) {{");
    let _ = writeln!(
        s,
        "    let b = col / pc.{name}_cpb;\n    let i = (col - b * pc.{name}_cpb) * pc.{name}_h + row;\n    switch b {{"
    );
    for b in 0..count.saturating_sub(1) {
        let _ = writeln!(s, "        case {b}u: {{ {name}{b}[i] = v; }}");
    }
    let _ = writeln!(s, "        default: {{ {name}{}[i] = v; }}\n    }}\n}}", count.saturating_sub(1));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_switch_over_every_buffer() {
        let one = reader("m", 0, 1);
        assert!(one.contains("return m0[col * pc.m_h + row];"));
        let three = reader("aux", 2, 3);
        for b in 0..3 {
            assert!(three.contains(&format!("@binding({}) var<storage, read> aux{b}", 2 + b)));
        }
        assert!(three.contains("case 1u: { return aux1[i]; }"));
        assert!(three.contains("default: { return aux2[i]; }"));
    }

    #[test]
    fn each_core_is_the_only_one_in_its_library() {
        let (narrow, wide) = (field(false), field(true));
        assert!(narrow.contains("fn mul32") && !narrow.contains("u64"));
        assert!(wide.contains("fn to64") && !wide.contains("fn mul32"));
        for lib in [narrow, wide] {
            assert_eq!(lib.matches("fn f_mul(").count(), 1);
            assert!(lib.contains("fn e_inv("));
        }
    }
}

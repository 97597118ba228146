//! The constraint IR: an AIR's constraints as one symbolic expression DAG,
//! built once and evaluated by every backend (and by the verifier at the
//! out-of-domain point).
//!
//! An AIR writes constraints with [`Expr`] (operator overloading over
//! trace cells, challenges, public values and constants); the
//! [`ConstraintBuilder`] flattens them into a [`ConstraintSystem`]: nodes in
//! topological order (children before parents), identical sub-expressions
//! shared, constants folded.

use crate::field::F;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ops::{Add, Mul, Neg, Sub};
use std::rc::Rc;

/// A leaf of the expression DAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Leaf {
    Const(F),
    /// Main (base-field) column `col` at row `row + offset`.
    Main {
        col: u32,
        offset: u32,
    },
    /// Auxiliary (extension-field) column `col` at row `row + offset`.
    Aux {
        col: u32,
        offset: u32,
    },
    /// Fixed (preprocessed) column `col` at row `row + offset`: known to
    /// the verifier, which evaluates it itself, so it is never committed.
    Fixed {
        col: u32,
        offset: u32,
    },
    /// A verifier challenge (extension field), drawn after the main commit.
    Challenge(u32),
    /// A public input (base field).
    Public(u32),
    /// A value the prover commits with the auxiliary trace (extension
    /// field), e.g. a LogUp bus sum the verifier adds up across tables.
    AuxValue(u32),
}

/// A node of the flattened DAG; operands are indices of earlier nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Node {
    Leaf(Leaf),
    Add(u32, u32),
    Sub(u32, u32),
    Mul(u32, u32),
    Neg(u32),
}

/// Rows on which a constraint must vanish, and so what divides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConstraintDomain {
    /// Every row but the last (may read the next row): divided by
    /// (x^n - 1) / (x - w^(n-1)).
    Transition,
    /// Row 0 only: divided by (x - 1).
    FirstRow,
    /// The last row only: divided by (x - w^(n-1)).
    LastRow,
    /// Every row: divided by x^n - 1.
    AllRows,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Constraint {
    pub node: u32,
    pub domain: ConstraintDomain,
}

/// The shape of the values an AIR's constraints may refer to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Layout {
    /// Fixed (preprocessed) base-field columns, known to the verifier.
    pub fixed_width: usize,
    pub main_width: usize,
    /// Number of extension columns (each stored as three base columns).
    pub aux_width: usize,
    pub num_challenges: usize,
    pub num_public: usize,
    pub num_aux_values: usize,
}

/// A symbolic expression. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Expr(Rc<ExprNode>);

#[derive(Debug)]
enum ExprNode {
    Leaf(Leaf),
    Add(Expr, Expr),
    Sub(Expr, Expr),
    Mul(Expr, Expr),
    Neg(Expr),
}

impl Expr {
    fn leaf(l: Leaf) -> Expr {
        Expr(Rc::new(ExprNode::Leaf(l)))
    }
    pub fn constant(v: F) -> Expr {
        Expr::leaf(Leaf::Const(v))
    }
    pub fn from_u64(v: u64) -> Expr {
        Expr::constant(F::new(v))
    }
    pub fn zero() -> Expr {
        Expr::constant(F::ZERO)
    }
    pub fn one() -> Expr {
        Expr::constant(F::ONE)
    }
    pub fn main(col: usize, offset: usize) -> Expr {
        Expr::leaf(Leaf::Main { col: col as u32, offset: offset as u32 })
    }
    pub fn aux(col: usize, offset: usize) -> Expr {
        Expr::leaf(Leaf::Aux { col: col as u32, offset: offset as u32 })
    }
    pub fn fixed(col: usize, offset: usize) -> Expr {
        Expr::leaf(Leaf::Fixed { col: col as u32, offset: offset as u32 })
    }
    pub fn challenge(i: usize) -> Expr {
        Expr::leaf(Leaf::Challenge(i as u32))
    }
    pub fn public(i: usize) -> Expr {
        Expr::leaf(Leaf::Public(i as u32))
    }
    pub fn aux_value(i: usize) -> Expr {
        Expr::leaf(Leaf::AuxValue(i as u32))
    }
    pub fn square(&self) -> Expr {
        self * self
    }
}

impl From<F> for Expr {
    fn from(v: F) -> Expr {
        Expr::constant(v)
    }
}

impl From<u64> for Expr {
    fn from(v: u64) -> Expr {
        Expr::from_u64(v)
    }
}

macro_rules! expr_binop {
    ($trait:ident, $method:ident, $variant:ident) => {
        impl $trait<Expr> for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self, rhs)))
            }
        }
        impl $trait<&Expr> for Expr {
            type Output = Expr;
            fn $method(self, rhs: &Expr) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self, rhs.clone())))
            }
        }
        impl $trait<Expr> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self.clone(), rhs)))
            }
        }
        impl $trait<&Expr> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: &Expr) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self.clone(), rhs.clone())))
            }
        }
        impl $trait<F> for Expr {
            type Output = Expr;
            fn $method(self, rhs: F) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self, Expr::constant(rhs))))
            }
        }
        impl $trait<F> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: F) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self.clone(), Expr::constant(rhs))))
            }
        }
        impl $trait<u64> for Expr {
            type Output = Expr;
            fn $method(self, rhs: u64) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self, Expr::from_u64(rhs))))
            }
        }
        impl $trait<u64> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: u64) -> Expr {
                Expr(Rc::new(ExprNode::$variant(self.clone(), Expr::from_u64(rhs))))
            }
        }
    };
}
expr_binop!(Add, add, Add);
expr_binop!(Sub, sub, Sub);
expr_binop!(Mul, mul, Mul);

impl Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr(Rc::new(ExprNode::Neg(self)))
    }
}
impl Neg for &Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr(Rc::new(ExprNode::Neg(self.clone())))
    }
}

/// Errors in an AIR's constraint definitions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IrError {
    #[error("constraint refers to {what} {index}, but the layout has {available}")]
    OutOfLayout { what: &'static str, index: usize, available: usize },
    #[error("the AIR declares no constraints")]
    Empty,
    #[error("node {node} reads an operand that does not come before it")]
    NotTopological { node: usize },
    #[error("malformed LogUp interactions: {0}")]
    Interaction(String),
}

/// Collects an AIR's constraints and flattens them.
pub struct ConstraintBuilder {
    layout: Layout,
    constraints: Vec<(Expr, ConstraintDomain)>,
}

impl ConstraintBuilder {
    pub fn new(layout: Layout) -> ConstraintBuilder {
        ConstraintBuilder { layout, constraints: Vec::new() }
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn constrain(&mut self, domain: ConstraintDomain, e: Expr) {
        self.constraints.push((e, domain));
    }
    pub fn when_transition(&mut self, e: Expr) {
        self.constrain(ConstraintDomain::Transition, e)
    }
    pub fn when_first_row(&mut self, e: Expr) {
        self.constrain(ConstraintDomain::FirstRow, e)
    }
    pub fn when_last_row(&mut self, e: Expr) {
        self.constrain(ConstraintDomain::LastRow, e)
    }
    pub fn always(&mut self, e: Expr) {
        self.constrain(ConstraintDomain::AllRows, e)
    }

    pub fn build(self) -> Result<ConstraintSystem, IrError> {
        if self.constraints.is_empty() {
            return Err(IrError::Empty);
        }
        let mut flat = Flattener { nodes: Vec::new(), dedup: HashMap::new(), memo: HashMap::new() };
        let mut constraints = Vec::with_capacity(self.constraints.len());
        for (e, domain) in &self.constraints {
            let node = flat.visit(e);
            constraints.push(Constraint { node, domain: *domain });
        }
        let cs = ConstraintSystem { nodes: flat.nodes, constraints, layout: self.layout };
        cs.check_layout()?;
        Ok(cs)
    }
}

struct Flattener {
    nodes: Vec<Node>,
    dedup: HashMap<Node, u32>,
    memo: HashMap<*const ExprNode, u32>,
}

impl Flattener {
    fn push(&mut self, n: Node) -> u32 {
        if let Some(&id) = self.dedup.get(&n) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(n);
        self.dedup.insert(n, id);
        id
    }

    fn constant_of(&self, id: u32) -> Option<F> {
        match self.nodes[id as usize] {
            Node::Leaf(Leaf::Const(v)) => Some(v),
            _ => None,
        }
    }

    fn visit(&mut self, e: &Expr) -> u32 {
        let key = Rc::as_ptr(&e.0);
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        // Iterative post-order keeps deep expression chains off the stack.
        let mut stack: Vec<(&Expr, bool)> = vec![(e, false)];
        while let Some((cur, expanded)) = stack.pop() {
            let ptr = Rc::as_ptr(&cur.0);
            if self.memo.contains_key(&ptr) {
                continue;
            }
            let children: Vec<&Expr> = match &*cur.0 {
                ExprNode::Leaf(_) => vec![],
                ExprNode::Add(a, b) | ExprNode::Sub(a, b) | ExprNode::Mul(a, b) => vec![a, b],
                ExprNode::Neg(a) => vec![a],
            };
            if !expanded && !children.is_empty() {
                stack.push((cur, true));
                for c in children {
                    stack.push((c, false));
                }
                continue;
            }
            let id = self.lower(cur);
            self.memo.insert(ptr, id);
        }
        self.memo[&key]
    }

    fn lower(&mut self, e: &Expr) -> u32 {
        let id = |s: &Self, x: &Expr| s.memo[&Rc::as_ptr(&x.0)];
        match &*e.0 {
            ExprNode::Leaf(l) => self.push(Node::Leaf(*l)),
            ExprNode::Add(a, b) => {
                let (a, b) = (id(self, a), id(self, b));
                match (self.constant_of(a), self.constant_of(b)) {
                    (Some(x), Some(y)) => self.push(Node::Leaf(Leaf::Const(x + y))),
                    (Some(x), _) if x.is_zero() => b,
                    (_, Some(y)) if y.is_zero() => a,
                    _ => self.push(Node::Add(a, b)),
                }
            }
            ExprNode::Sub(a, b) => {
                let (a, b) = (id(self, a), id(self, b));
                match (self.constant_of(a), self.constant_of(b)) {
                    (Some(x), Some(y)) => self.push(Node::Leaf(Leaf::Const(x - y))),
                    (_, Some(y)) if y.is_zero() => a,
                    _ => self.push(Node::Sub(a, b)),
                }
            }
            ExprNode::Mul(a, b) => {
                let (a, b) = (id(self, a), id(self, b));
                match (self.constant_of(a), self.constant_of(b)) {
                    (Some(x), Some(y)) => self.push(Node::Leaf(Leaf::Const(x * y))),
                    (Some(x), _) if x == F::ONE => b,
                    (_, Some(y)) if y == F::ONE => a,
                    (Some(x), _) | (_, Some(x)) if x.is_zero() => self.push(Node::Leaf(Leaf::Const(F::ZERO))),
                    _ => self.push(Node::Mul(a, b)),
                }
            }
            ExprNode::Neg(a) => {
                let a = id(self, a);
                match self.constant_of(a) {
                    Some(x) => self.push(Node::Leaf(Leaf::Const(-x))),
                    None => self.push(Node::Neg(a)),
                }
            }
        }
    }
}

/// An AIR's constraints, flattened: what every backend evaluates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConstraintSystem {
    /// Topologically ordered: every operand index is below its node's.
    pub nodes: Vec<Node>,
    pub constraints: Vec<Constraint>,
    pub layout: Layout,
}

impl ConstraintSystem {
    /// Checks a system that may have been deserialized or built by hand:
    /// operands precede their node, constraint roots exist, and every leaf
    /// lies within the layout.
    pub fn check_structure(&self) -> Result<(), IrError> {
        let len = self.nodes.len();
        for (k, node) in self.nodes.iter().enumerate() {
            let ok = match *node {
                Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) => (a as usize) < k && (b as usize) < k,
                Node::Neg(a) => (a as usize) < k,
                Node::Leaf(_) => true,
            };
            if !ok {
                return Err(IrError::NotTopological { node: k });
            }
        }
        if let Some(c) = self.constraints.iter().find(|c| c.node as usize >= len) {
            return Err(IrError::OutOfLayout { what: "node", index: c.node as usize, available: len });
        }
        if self.constraints.is_empty() {
            return Err(IrError::Empty);
        }
        self.check_layout()
    }

    fn check_layout(&self) -> Result<(), IrError> {
        let l = &self.layout;
        for n in &self.nodes {
            if let Node::Leaf(leaf) = n {
                let (what, index, available) = match *leaf {
                    Leaf::Main { col, .. } => ("main column", col as usize, l.main_width),
                    Leaf::Aux { col, .. } => ("auxiliary column", col as usize, l.aux_width),
                    Leaf::Fixed { col, .. } => ("fixed column", col as usize, l.fixed_width),
                    Leaf::Challenge(i) => ("challenge", i as usize, l.num_challenges),
                    Leaf::Public(i) => ("public input", i as usize, l.num_public),
                    Leaf::AuxValue(i) => ("auxiliary value", i as usize, l.num_aux_values),
                    Leaf::Const(_) => continue,
                };
                if index >= available {
                    return Err(IrError::OutOfLayout { what, index, available });
                }
            }
        }
        Ok(())
    }

    /// The polynomial degree of every node in the trace columns.
    pub fn node_degrees(&self) -> Vec<usize> {
        let mut deg: Vec<usize> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let d = match *n {
                Node::Leaf(Leaf::Main { .. } | Leaf::Aux { .. } | Leaf::Fixed { .. }) => 1,
                Node::Leaf(_) => 0,
                Node::Add(a, b) | Node::Sub(a, b) => deg[a as usize].max(deg[b as usize]),
                Node::Mul(a, b) => deg[a as usize] + deg[b as usize],
                Node::Neg(a) => deg[a as usize],
            };
            deg.push(d);
        }
        deg
    }

    /// Whether each node's value lies in the base field (no challenge,
    /// auxiliary column or auxiliary value below it): backends use this to
    /// evaluate base sub-expressions with cheaper arithmetic.
    pub fn node_is_base(&self) -> Vec<bool> {
        let mut base: Vec<bool> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let b = match *n {
                Node::Leaf(Leaf::Const(_) | Leaf::Main { .. } | Leaf::Fixed { .. } | Leaf::Public(_)) => true,
                Node::Leaf(_) => false,
                Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) => base[a as usize] && base[b as usize],
                Node::Neg(a) => base[a as usize],
            };
            base.push(b);
        }
        base
    }

    /// The largest constraint degree.
    pub fn max_degree(&self) -> usize {
        let deg = self.node_degrees();
        self.constraints.iter().map(|c| deg[c.node as usize]).max().unwrap_or(0)
    }

    /// How many degree-< n parts the quotient splits into. A constraint of
    /// degree d has numerator degree <= d(n-1); divided by its vanishing
    /// polynomial the quotient stays below (d-1)n for transition and
    /// all-row constraints and below d*n for single-row ones.
    pub fn quotient_parts(&self) -> usize {
        let deg = self.node_degrees();
        self.constraints
            .iter()
            .map(|c| {
                let d = deg[c.node as usize].max(1);
                match c.domain {
                    ConstraintDomain::Transition | ConstraintDomain::AllRows => d - 1,
                    ConstraintDomain::FirstRow | ConstraintDomain::LastRow => d,
                }
            })
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// The row offsets the constraints read (always includes 0).
    pub fn offsets(&self) -> Vec<usize> {
        let mut offs = vec![0usize];
        for n in &self.nodes {
            if let Node::Leaf(Leaf::Main { offset, .. } | Leaf::Aux { offset, .. } | Leaf::Fixed { offset, .. }) = n {
                offs.push(*offset as usize);
            }
        }
        offs.sort_unstable();
        offs.dedup();
        offs
    }

    /// Evaluates every constraint on `len` rows at once: `leaf` fills a
    /// leaf's values for those rows. One pass per node over a whole batch
    /// keeps the interpretation cost off the per-row path.
    pub fn eval_batch<V, L>(&self, len: usize, mut leaf: L) -> Vec<Vec<V>>
    where
        V: Copy + Default + Add<Output = V> + Sub<Output = V> + Mul<Output = V> + Neg<Output = V>,
        L: FnMut(&Leaf, &mut [V]),
    {
        let mut vals: Vec<Vec<V>> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let mut out = vec![V::default(); len];
            match *n {
                Node::Leaf(ref l) => leaf(l, &mut out),
                Node::Add(a, b) => zip_into(&mut out, &vals[a as usize], &vals[b as usize], |x, y| x + y),
                Node::Sub(a, b) => zip_into(&mut out, &vals[a as usize], &vals[b as usize], |x, y| x - y),
                Node::Mul(a, b) => zip_into(&mut out, &vals[a as usize], &vals[b as usize], |x, y| x * y),
                Node::Neg(a) => out.iter_mut().zip(&vals[a as usize]).for_each(|(o, &x)| *o = -x),
            }
            vals.push(out);
        }
        self.constraints.iter().map(|c| vals[c.node as usize].clone()).collect()
    }

    /// Evaluates every node, given the value of each leaf; returns the
    /// values of the constraints in declaration order.
    pub fn eval<V, L>(&self, mut leaf: L) -> Vec<V>
    where
        V: Copy + Add<Output = V> + Sub<Output = V> + Mul<Output = V> + Neg<Output = V>,
        L: FnMut(&Leaf) -> V,
    {
        let mut vals: Vec<V> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let v = match n {
                Node::Leaf(l) => leaf(l),
                Node::Add(a, b) => vals[*a as usize] + vals[*b as usize],
                Node::Sub(a, b) => vals[*a as usize] - vals[*b as usize],
                Node::Mul(a, b) => vals[*a as usize] * vals[*b as usize],
                Node::Neg(a) => -vals[*a as usize],
            };
            vals.push(v);
        }
        self.constraints.iter().map(|c| vals[c.node as usize]).collect()
    }
}

fn zip_into<V: Copy>(out: &mut [V], a: &[V], b: &[V], f: impl Fn(V, V) -> V) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout { fixed_width: 0, main_width: 2, aux_width: 1, num_challenges: 1, num_public: 1, num_aux_values: 0 }
    }

    #[test]
    fn shared_subexpressions_are_stored_once() {
        let mut b = ConstraintBuilder::new(layout());
        let a = Expr::main(0, 0);
        let sq = &a * &a;
        b.when_transition(Expr::main(0, 1) - &sq * &a);
        b.always(&sq - Expr::main(1, 0));
        let cs = b.build().unwrap();
        let squares = cs.nodes.iter().filter(|n| matches!(n, Node::Mul(x, y) if x == y)).count();
        assert_eq!(squares, 1);
        assert_eq!(cs.max_degree(), 3);
        assert_eq!(cs.quotient_parts(), 2);
        assert_eq!(cs.offsets(), vec![0, 1]);
    }

    #[test]
    fn constants_fold_and_eval_matches_direct_arithmetic() {
        let mut b = ConstraintBuilder::new(layout());
        let e = (Expr::from_u64(3) * Expr::from_u64(4) + Expr::main(0, 0)) * Expr::one() - Expr::public(0);
        b.when_first_row(e);
        let cs = b.build().unwrap();
        assert!(cs.nodes.contains(&Node::Leaf(Leaf::Const(F::new(12)))));
        let v = cs.eval(|l| match l {
            Leaf::Const(c) => *c,
            Leaf::Main { .. } => F::new(5),
            Leaf::Public(_) => F::new(2),
            _ => F::ZERO,
        });
        assert_eq!(v, vec![F::new(15)]);
        assert_eq!(cs.quotient_parts(), 1);
    }

    #[test]
    fn batch_evaluation_matches_row_evaluation() {
        let mut b = ConstraintBuilder::new(layout());
        let (x, y) = (Expr::main(0, 0), Expr::main(1, 0));
        b.always(&x * &x * &y - Expr::public(0) + Expr::from_u64(3));
        b.when_first_row(-(&x - &y));
        let cs = b.build().unwrap();
        let col = |c: u32, r: usize| F::new((r as u64 + 1) * (c as u64 + 7) * 0x1234_5677);
        let batch = cs.eval_batch::<F, _>(5, |l, out| {
            for (r, o) in out.iter_mut().enumerate() {
                *o = match *l {
                    Leaf::Const(v) => v,
                    Leaf::Main { col: c, .. } => col(c, r),
                    Leaf::Public(_) => F::new(11),
                    _ => F::ZERO,
                };
            }
        });
        for (r, (a, b)) in batch[0].iter().zip(&batch[1]).enumerate() {
            let row = cs.eval(|l| match *l {
                Leaf::Const(v) => v,
                Leaf::Main { col: c, .. } => col(c, r),
                Leaf::Public(_) => F::new(11),
                _ => F::ZERO,
            });
            assert_eq!(row, vec![*a, *b]);
        }
    }

    #[test]
    fn out_of_layout_references_are_rejected() {
        let mut b = ConstraintBuilder::new(layout());
        b.always(Expr::main(5, 0));
        assert!(matches!(b.build(), Err(IrError::OutOfLayout { index: 5, .. })));
        assert_eq!(ConstraintBuilder::new(layout()).build(), Err(IrError::Empty));
    }
}

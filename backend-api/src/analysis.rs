//! What every backend needs to know about a constraint system before it
//! generates or interprets code for it, computed once here: which nodes
//! read no trace column (their values are the same on every row, so they
//! are computed once on the host: "hoisted"), which nodes the constraints
//! need per row (liveness), the last node reading each one (so a register
//! or buffer can be reused after it), and which nodes are base-field.

use crate::ext::Ext;
use crate::field::F;
use crate::ir::{ConstraintSystem, Leaf, Node};

/// The per-node facts of one constraint system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The node's value lies in the base field.
    pub is_base: Vec<bool>,
    /// The node reads no trace column (constants, publics, challenges,
    /// auxiliary values and what is built from them alone).
    pub column_free: Vec<bool>,
    /// Column-free and not a leaf: worth computing once on the host.
    pub hoisted: Vec<bool>,
    /// Needed per row: reachable from a constraint without descending
    /// below a hoisted node (whose value comes from the host).
    pub live: Vec<bool>,
    /// For a live node, the last live node that reads it (itself when only
    /// its constraints read it); `None` for nodes that are not live.
    pub last_use: Vec<Option<usize>>,
    /// The constraints (indices) rooted at each node, in declaration order.
    pub roots: Vec<Vec<usize>>,
}

/// The operands of a node.
pub fn operands(n: &Node) -> impl Iterator<Item = usize> {
    let (a, b) = match *n {
        Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) => (Some(a), Some(b)),
        Node::Neg(a) => (Some(a), None),
        Node::Leaf(_) => (None, None),
    };
    a.into_iter().chain(b).map(|x| x as usize)
}

impl Analysis {
    /// Analyses a structurally valid system (`check_structure` passed).
    pub fn new(cs: &ConstraintSystem) -> Analysis {
        let len = cs.nodes.len();
        let is_base = cs.node_is_base();
        let mut column_free = vec![false; len];
        for (i, node) in cs.nodes.iter().enumerate() {
            column_free[i] = match node {
                Node::Leaf(Leaf::Main { .. } | Leaf::Fixed { .. } | Leaf::Aux { .. }) => false,
                Node::Leaf(_) => true,
                n => operands(n).all(|x| column_free[x]),
            };
        }
        let hoisted: Vec<bool> = (0..len).map(|i| column_free[i] && !matches!(cs.nodes[i], Node::Leaf(_))).collect();
        let mut roots = vec![Vec::new(); len];
        for (k, c) in cs.constraints.iter().enumerate() {
            roots[c.node as usize].push(k);
        }
        let mut live: Vec<bool> = roots.iter().map(|r| !r.is_empty()).collect();
        let mut last_use: Vec<Option<usize>> = (0..len).map(|i| live[i].then_some(i)).collect();
        for i in (0..len).rev() {
            if !live[i] || hoisted[i] {
                continue;
            }
            for x in operands(&cs.nodes[i]) {
                live[x] = true;
                last_use[x] = Some(last_use[x].map_or(i, |v| v.max(i)));
            }
        }
        Analysis { is_base, column_free, hoisted, live, last_use, roots }
    }

    /// For each live node, the live nodes whose last reader it is (its own
    /// index included when only its constraints read it): what may be
    /// released once the node has been computed.
    pub fn released_at(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.live.len()];
        for (i, l) in self.last_use.iter().enumerate() {
            if let Some(l) = l {
                out[*l].push(i);
            }
        }
        out
    }
}

/// Marks `root`'s cone in `live`: the nodes a row needs for it that are
/// not marked yet, not descending below a node for which `given` holds
/// (its value comes from the constant buffer). Returns how many it marked.
pub fn mark_cone(cs: &ConstraintSystem, root: usize, given: &dyn Fn(usize) -> bool, live: &mut [bool]) -> usize {
    let (mut stack, mut added) = (vec![root], 0);
    while let Some(i) = stack.pop() {
        if live[i] {
            continue;
        }
        live[i] = true;
        added += 1;
        if !given(i) {
            stack.extend(operands(&cs.nodes[i]));
        }
    }
    added
}

/// The constraints in consecutive runs (neighbours tend to share nodes),
/// each growing until its cone ([`mark_cone`]) would pass `max_nodes`: a
/// generated kernel per run compiles in far less time than one for all
/// (a GPU compiler's time grows faster than a kernel's length). A system
/// without constraints is one empty part.
pub fn parts(cs: &ConstraintSystem, max_nodes: usize, given: &dyn Fn(usize) -> bool) -> Vec<Vec<usize>> {
    let mut parts = vec![];
    let (mut run, mut live, mut nodes) = (Vec::new(), vec![false; cs.nodes.len()], 0);
    for (k, c) in cs.constraints.iter().enumerate() {
        let mut grown = live.clone();
        let added = mark_cone(cs, c.node as usize, given, &mut grown);
        if !run.is_empty() && nodes + added > max_nodes {
            parts.push(std::mem::take(&mut run));
            grown = vec![false; cs.nodes.len()];
            nodes = mark_cone(cs, c.node as usize, given, &mut grown);
        } else {
            nodes += added;
        }
        run.push(k);
        live = grown;
    }
    parts.push(run);
    parts
}

/// The value of every column-free node (`None` for the others), given the
/// statement's challenges, publics and auxiliary values: what the hoisted
/// nodes hold on every row.
pub fn column_free_values(
    cs: &ConstraintSystem,
    challenges: &[Ext],
    publics: &[F],
    aux_values: &[Ext],
) -> Vec<Option<Ext>> {
    let mut vals: Vec<Option<Ext>> = Vec::with_capacity(cs.nodes.len());
    for node in &cs.nodes {
        let v = match *node {
            Node::Leaf(Leaf::Const(c)) => Some(Ext::from_base(c)),
            Node::Leaf(Leaf::Challenge(k)) => challenges.get(k as usize).copied(),
            Node::Leaf(Leaf::Public(k)) => publics.get(k as usize).map(|&p| Ext::from_base(p)),
            Node::Leaf(Leaf::AuxValue(k)) => aux_values.get(k as usize).copied(),
            Node::Leaf(_) => None,
            Node::Add(a, b) => vals[a as usize].zip(vals[b as usize]).map(|(x, y)| x + y),
            Node::Sub(a, b) => vals[a as usize].zip(vals[b as usize]).map(|(x, y)| x - y),
            Node::Mul(a, b) => vals[a as usize].zip(vals[b as usize]).map(|(x, y)| x * y),
            Node::Neg(a) => vals[a as usize].map(|x| -x),
        };
        vals.push(v);
    }
    vals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ConstraintBuilder, Expr, Layout};

    fn system() -> ConstraintSystem {
        let layout =
            Layout { fixed_width: 0, main_width: 2, aux_width: 1, num_challenges: 2, num_public: 1, num_aux_values: 0 };
        let mut b = ConstraintBuilder::new(layout);
        let beta2 = Expr::challenge(0) * Expr::challenge(0);
        // Dead branch below a hoisted node: challenge(1) * public(0) is
        // read only by the hoisted product.
        let hoisted = &beta2 * (Expr::challenge(1) * Expr::public(0));
        b.always(Expr::main(0, 0) * &hoisted - Expr::aux(0, 1));
        b.when_first_row(Expr::main(1, 0) * Expr::main(1, 0));
        b.build().unwrap()
    }

    #[test]
    fn hoisted_nodes_stop_liveness_and_last_uses_are_the_last_readers() {
        let cs = system();
        let a = Analysis::new(&cs);
        for (i, n) in cs.nodes.iter().enumerate() {
            // A hoisted node's operands are live only if something else
            // reads them per row.
            if a.live[i] && !a.hoisted[i] {
                for x in operands(n) {
                    assert!(a.live[x], "operand {x} of live node {i}");
                    assert!(a.last_use[x].unwrap() >= i);
                }
            }
            if a.hoisted[i] {
                assert!(a.column_free[i] && operands(n).all(|x| a.column_free[x]));
            }
        }
        let hoisted_live = (0..cs.nodes.len()).filter(|&i| a.hoisted[i] && a.live[i]).count();
        assert_eq!(hoisted_live, 1, "exactly the top product is hoisted and read per row");
        // Nodes below it (the challenge products) are not live.
        let below: Vec<usize> = (0..cs.nodes.len()).filter(|&i| a.hoisted[i] && !a.live[i]).collect();
        assert_eq!(below.len(), 2, "{below:?}");
        // Constraint roots are released at themselves or later.
        for c in &cs.constraints {
            assert!(a.last_use[c.node as usize].unwrap() >= c.node as usize);
        }
        let released: usize = a.released_at().iter().map(Vec::len).sum();
        assert_eq!(released, a.live.iter().filter(|&&l| l).count());
    }

    #[test]
    fn column_free_values_match_evaluation() {
        let cs = system();
        let ch = [Ext::new(F::new(3), F::new(5), F::new(7)), Ext::new(F::new(11), F::ZERO, F::new(2))];
        let publics = [F::new(13)];
        let vals = column_free_values(&cs, &ch, &publics, &[]);
        let a = Analysis::new(&cs);
        let top = (0..cs.nodes.len()).find(|&i| a.hoisted[i] && a.live[i]).unwrap();
        assert_eq!(vals[top], Some(ch[0] * ch[0] * (ch[1] * Ext::from_base(publics[0]))));
        assert!(vals.iter().zip(&a.column_free).all(|(v, &f)| v.is_some() == f));
    }
}

//! The op x type validity table (docs/semantics.md rules 1, 2 and 7).

use rma_core::{BasicType, Error, Op, Result, RmaCall, TypeClass};

/// Whether `op` is defined on elements of `basic` (docs/semantics.md rule 2), whatever the
/// call.
pub fn op_defined_on(op: Op, basic: BasicType) -> bool {
    use TypeClass::*;
    let class = basic.class();
    match op {
        Op::Max | Op::Min => matches!(class, Integer | Address | Float),
        // long double arithmetic is the x87 unit's (crate::x87)
        Op::Sum | Op::Prod if basic == BasicType::LongDouble => {
            cfg!(target_arch = "x86_64")
        }
        Op::Sum | Op::Prod => matches!(class, Integer | Address | Float | Complex),
        Op::Land | Op::Lor | Op::Lxor => matches!(class, Integer | Logical),
        Op::Band | Op::Bor | Op::Bxor => matches!(class, Integer | Byte | Address),
        Op::MaxLoc | Op::MinLoc => matches!(class, Pair),
        Op::Replace | Op::NoOp => true,
    }
}

/// Whether `call` accepts `op` at all (docs/semantics.md rule 1): NO_OP only in
/// get_accumulate and fetch_and_op; compare_and_swap takes no op.
pub fn op_allowed_in(op: Op, call: RmaCall) -> bool {
    match call {
        RmaCall::Accumulate => op != Op::NoOp,
        RmaCall::GetAccumulate | RmaCall::FetchAndOp => true,
        RmaCall::CompareAndSwap => false,
        RmaCall::Allreduce => !matches!(op, Op::Replace | Op::NoOp),
    }
}

/// Checks `op` on `basic` in `call`, returning an error of class OP if the pair is
/// outside the table.
///
/// ```
/// use rma_core::{BasicType, ErrorClass, Op, RmaCall};
/// assert!(rma_ops::check(Op::Sum, BasicType::F64, RmaCall::Accumulate).is_ok());
/// let e = rma_ops::check(Op::NoOp, BasicType::F64, RmaCall::Accumulate).unwrap_err();
/// assert_eq!(e.class(), ErrorClass::Op);
/// let e = rma_ops::check(Op::Max, BasicType::C64, RmaCall::FetchAndOp).unwrap_err();
/// assert_eq!(e.class(), ErrorClass::Op);
/// ```
pub fn check(op: Op, basic: BasicType, call: RmaCall) -> Result<()> {
    if !op_allowed_in(op, call) {
        return Err(Error::OpNotForCall { op, call });
    }
    if !op_defined_on(op, basic) {
        return Err(Error::OpNotForType { op, basic });
    }
    Ok(())
}

/// Checks that compare_and_swap accepts `basic` (docs/semantics.md rule 7): integer,
/// address-sized, logical or byte; anything else is an error of class TYPE.
pub fn check_cas_type(basic: BasicType) -> Result<()> {
    use TypeClass::*;
    match basic.class() {
        Integer | Address | Logical | Byte => Ok(()),
        Float | Complex | Pair => Err(Error::TypeNotAllowed {
            call: "compare_and_swap",
            found: basic.name().to_owned(),
            reason: "it takes integer, address-sized, logical or byte elements only",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words `Op::domain` uses for each type class in the OP error's message.
    fn word(class: TypeClass) -> &'static str {
        match class {
            TypeClass::Integer => "integer",
            TypeClass::Address => "address-sized",
            TypeClass::Float => "floating-point",
            TypeClass::Complex => "complex",
            TypeClass::Logical => "bool",
            TypeClass::Byte => "byte",
            TypeClass::Pair => "pair",
        }
    }

    /// The op x type error names the types the op does take, and those agree with the
    /// table (`op_defined_on`): every class it takes is named, no class it refuses is.
    #[test]
    fn op_type_message_names_the_types_the_op_takes() {
        for op in Op::ALL {
            let domain = op.domain();
            if BasicType::ALL.iter().all(|&b| op_defined_on(op, b)) {
                assert_eq!(domain, "every type", "{op}");
                continue;
            }
            for b in BasicType::ALL {
                let named = domain.contains(word(b.class()));
                assert_eq!(op_defined_on(op, b), named, "{op} on {b}: {domain:?}");
                if !op_defined_on(op, b) {
                    let msg = check(op, b, RmaCall::GetAccumulate)
                        .unwrap_err()
                        .to_string();
                    assert!(
                        msg.contains(&format!("{op} is not defined on {b}"))
                            && msg.contains(domain),
                        "{msg}"
                    );
                }
            }
        }
    }
}

//! `#[derive(Equivalence)]`: rma's `Equivalence` for a user struct, without writing
//! `unsafe impl` and byte offsets by hand.
//!
//! The struct must be `#[repr(C)]` (or `#[repr(transparent)]`), without generics, and
//! every field must have **the same type**, itself `Equivalence` (a primitive, a pair
//! type such as `DoubleInt`, an array, another derived struct). That covers the common
//! cases — a point `{ x: f64, y: f64, z: f64 }`, a newtype over a pair type for
//! MAXLOC — and keeps the datatype one element type repeated, which every RMA call
//! (the accumulate family included) accepts. Refused at compile time, with a message
//! naming the rule:
//!
//! - fields of different types (write `[T; N]` fields of one type, or describe a
//!   mixed struct with `Datatype::structure` and an `unsafe impl` of your own);
//! - references and raw pointers (their bytes mean nothing in another process);
//! - a missing `repr(C)` (Rust's default layout may reorder fields);
//! - padding: the size of the struct must be the sum of its fields' sizes (checked by
//!   a constant assertion, so it holds for the real layout, not the source text).
//!
//! A struct of one field takes that field's basic type (`BASIC`), so single-element
//! calls such as `fetch_and_op` work on a newtype. Byte patterns are valid exactly
//! when they are for the field type.
//!
//! The generated code names `rma_win` (`::rma_win::Equivalence`); a crate that uses
//! `rma-datatype` without `rma-win` writes `#[equivalence(crate = "rma_datatype")]`.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{quote, ToTokens};
use syn::{parse_macro_input, Data, DeriveInput, Error, Fields, Type};

/// Derives `Equivalence` for a `#[repr(C)]` struct whose fields all have one type; see
/// the crate documentation for the rules.
#[proc_macro_derive(Equivalence, attributes(equivalence))]
pub fn derive_equivalence(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn fail<T>(span: Span, msg: &str) -> syn::Result<T> {
    Err(Error::new(span, format!("derive(Equivalence): {msg}")))
}

/// The crate the generated code names: `rma_win`, or `#[equivalence(crate = "...")]`.
fn krate(input: &DeriveInput) -> syn::Result<syn::Path> {
    let mut path: syn::Path = syn::parse_quote!(::rma_win);
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("equivalence"))
    {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let s: syn::LitStr = meta.value()?.parse()?;
                path = syn::parse_str(&format!("::{}", s.value()))?;
                Ok(())
            } else {
                Err(meta.error("derive(Equivalence): the only option is crate = \"...\""))
            }
        })?;
    }
    Ok(path)
}

/// Whether the struct is `repr(C)` or `repr(transparent)` (other hints such as
/// `align` may come with it: padding they add is caught by the size assertion).
fn has_c_layout(input: &DeriveInput) -> bool {
    input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("repr"))
        .filter_map(|a| match &a.meta {
            syn::Meta::List(list) => Some(list.tokens.to_string()),
            _ => None,
        })
        .any(|hints| {
            hints
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "C" || w == "transparent")
        })
}

/// `Some(reason)` when `ty` cannot be an element of a window: a reference, a pointer.
fn forbidden(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(_) => Some("a reference"),
        Type::Ptr(_) => Some("a raw pointer"),
        Type::Array(a) => forbidden(&a.elem),
        Type::Paren(p) => forbidden(&p.elem),
        Type::Group(g) => forbidden(&g.elem),
        _ => None,
    }
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let name = &input.ident;
    let span = name.span();
    let Data::Struct(data) = &input.data else {
        return fail(
            span,
            "only structs can be derived (an enum or union has bytes that are not valid values)",
        );
    };
    if !input.generics.params.is_empty() {
        return fail(
            input.generics.span_or(span),
            "generic structs are not supported; derive it for a concrete struct",
        );
    }
    if !has_c_layout(input) {
        return fail(
            span,
            "the struct needs #[repr(C)] (Rust's default layout may reorder fields and add padding)",
        );
    }
    let fields: Vec<&syn::Field> = match &data.fields {
        Fields::Named(f) => f.named.iter().collect(),
        Fields::Unnamed(f) => f.unnamed.iter().collect(),
        Fields::Unit => vec![],
    };
    let Some(first) = fields.first() else {
        return fail(span, "a struct without fields has no datatype");
    };
    for f in &fields {
        if let Some(what) = forbidden(&f.ty) {
            return fail(
                type_span(&f.ty),
                &format!("a field is {what}, whose bytes mean nothing in another rank's memory"),
            );
        }
    }
    // A macro in a field's type (`line!()` in an array length, a stateful proc macro)
    // can make the same text mean different types, here and where the generated code
    // repeats it: refused, so that every check below speaks of the real field types.
    for f in &fields {
        let text = f.ty.to_token_stream().to_string();
        if text.contains('!') {
            return fail(
                type_span(&f.ty),
                &format!(
                    "a field type contains a macro invocation (`{text}`); write the type out \
                     (a macro could make the same text mean different types)"
                ),
            );
        }
    }
    let ty = &first.ty;
    let shown = ty.to_token_stream().to_string();
    for f in &fields[1..] {
        let other = f.ty.to_token_stream().to_string();
        if other != shown {
            return fail(
                type_span(&f.ty),
                &format!(
                    "every field must have the same type (found `{shown}` and `{other}`): one \
                     element type repeated is a datatype every RMA call accepts; use \
                     `[{shown}; N]` fields, or describe a mixed struct with \
                     Datatype::structure in an unsafe impl of your own"
                ),
            );
        }
    }
    let n = fields.len();
    let krate = krate(input)?;
    // each field by access expression, so the checks see the struct's own field types
    let access: Vec<proc_macro2::TokenStream> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.ident {
            Some(id) => quote!(#id),
            None => {
                let idx = syn::Index::from(i);
                quote!(#idx)
            }
        })
        .collect();
    let first_field = &access[0];
    let others = &access[1..];
    let field_types: Vec<&Type> = fields.iter().map(|f| &f.ty).collect();
    let basic = if n == 1 {
        quote!(<#ty as #krate::Equivalence>::BASIC)
    } else {
        quote!(::core::option::Option::None)
    };
    let datatype = if n == 1 {
        quote!(<#ty as #krate::Equivalence>::datatype())
    } else {
        quote!(<[#ty; #n] as #krate::Equivalence>::datatype())
    };
    let msg = format!(
        "derive(Equivalence): {name} has padding (its size is not {n} times the size of \
         its field type); add explicit padding fields of the same type, or reorder"
    );
    Ok(quote! {
        const _: () = ::core::assert!(
            ::core::mem::size_of::<#name>() == #n * ::core::mem::size_of::<#ty>()
                && ::core::mem::size_of::<#name>()
                    == 0 #(+ ::core::mem::size_of::<#field_types>())*,
            #msg
        );

        // every field has the first field's type, read from the struct itself (a
        // PhantomData per field: no coercion can make two types match)
        const _: fn(&#name) = |s: &#name| {
            fn type_of<T>(_: &T) -> ::core::marker::PhantomData<T> {
                ::core::marker::PhantomData
            }
            fn same<T>(_: ::core::marker::PhantomData<T>, _: ::core::marker::PhantomData<T>) {}
            #( same(type_of(&s.#first_field), type_of(&s.#others)); )*
        };

        // SAFETY: checked above and by the derive: the struct is repr(C) with #n fields
        // of the one type `#ty`, and its size is exactly #n times that type's, so the
        // fields lie back to back at multiples of its size with no padding (rule 1);
        // the datatype is #n contiguous copies of the field type's, lower bound 0 and
        // extent the struct's size (rule 2); a byte pattern is valid exactly when each
        // field's bytes are, which `ANY_BIT_PATTERN` and `from_bytes` defer to the
        // field type for (rule 3); `BASIC` is the field type's only for one field, whose
        // size is then the struct's (rule 4).
        unsafe impl #krate::Equivalence for #name {
            const BASIC: ::core::option::Option<#krate::BasicType> = #basic;
            const ANY_BIT_PATTERN: bool =
                true #(&& <#field_types as #krate::Equivalence>::ANY_BIT_PATTERN)*;

            fn datatype() -> #krate::Datatype {
                #datatype
            }

            fn from_bytes(bytes: &[u8]) -> ::core::option::Option<Self> {
                if <Self as #krate::Equivalence>::ANY_BIT_PATTERN {
                    if bytes.len() != ::core::mem::size_of::<Self>() {
                        return ::core::option::Option::None;
                    }
                    // SAFETY: exactly size_of::<Self>() initialised bytes, read
                    // unaligned; every byte pattern is valid for the field type and the
                    // struct is those fields back to back.
                    return ::core::option::Option::Some(unsafe {
                        ::core::ptr::read_unaligned(bytes.as_ptr().cast::<Self>())
                    });
                }
                let values: [#ty; #n] = <[#ty; #n] as #krate::Equivalence>::from_bytes(bytes)?;
                // SAFETY: `[#ty; #n]` and the struct have the same size (asserted above)
                // and the same layout (repr(C), #n fields of `#ty` back to back), and
                // every value in `values` is valid.
                ::core::option::Option::Some(unsafe {
                    ::core::mem::transmute::<[#ty; #n], Self>(values)
                })
            }
        }
    })
}

fn type_span(ty: &Type) -> Span {
    syn::spanned::Spanned::span(ty)
}

trait SpanOr {
    fn span_or(&self, fallback: Span) -> Span;
}

impl SpanOr for syn::Generics {
    fn span_or(&self, fallback: Span) -> Span {
        self.lt_token.as_ref().map_or(fallback, |t| t.span)
    }
}

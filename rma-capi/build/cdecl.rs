//! C function declarations as rma-capi writes them: the prototypes of `mpi.h` and the
//! lines of `src/mpi31.txt`. Shared by the build script (which makes refusals and
//! PMPI_ names from them) and the tests (which check mpi.h against the list and the
//! library), through `#[path]`.
//!
//! The grammar is the small one mpi.h uses: `<return type> <name>(<parameters>)`,
//! parameters `<type words> <stars><name><[]...>` or `...`, no function-pointer
//! declarators (callbacks are typedef names).
#![allow(dead_code)]

/// One parameter of a prototype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    /// As written (whitespace normalized).
    pub(crate) text: String,
    /// The type's name without qualifiers (`int`, `MPI_Comm`, `char`).
    pub(crate) base: String,
    /// A pointer or an array (`*` or `[]` after the type).
    pub(crate) pointer: bool,
    /// The parameter's name, when it has one.
    pub(crate) name: Option<String>,
}

/// One function prototype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decl {
    /// The return type, as written (`int`, `double`, `MPI_Aint`).
    pub(crate) ret: String,
    pub(crate) name: String,
    pub(crate) params: Vec<Param>,
    /// Ends with `...`.
    pub(crate) variadic: bool,
}

impl Decl {
    /// The parameter list as C writes it (`void` for none).
    pub(crate) fn params_text(&self) -> String {
        let mut v: Vec<String> = self.params.iter().map(|p| p.text.clone()).collect();
        if self.variadic {
            v.push("...".into());
        }
        if v.is_empty() {
            "void".into()
        } else {
            v.join(", ")
        }
    }

    /// `ret name(params)` under another name (no `;`).
    pub(crate) fn prototype_as(&self, name: &str) -> String {
        format!("{} {}({})", self.ret, name, self.params_text())
    }

    /// `ret name(params)` (no `;`).
    pub(crate) fn prototype(&self) -> String {
        self.prototype_as(&self.name)
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

/// Splits at top-level commas (parentheses and brackets nest).
fn split_params(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out.into_iter().map(|p| squash(&p)).collect()
}

fn parse_param(text: &str) -> Result<Param, String> {
    let pointer = text.contains('*') || text.contains('[');
    // words: identifiers outside brackets
    let head = text.split('[').next().unwrap_or("");
    let words: Vec<&str> = head
        .split(|c: char| c.is_whitespace() || c == '*')
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().any(|w| !is_ident(w)) {
        return Err(format!("cannot read the parameter `{text}`"));
    }
    let quals = [
        "const", "volatile", "restrict", "unsigned", "signed", "struct",
    ];
    let types: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !quals.contains(w))
        .collect();
    let (base, name) = match types.as_slice() {
        [t] => ((*t).to_string(), None),
        [t, n] => ((*t).to_string(), Some((*n).to_string())),
        // `long long x`, `unsigned long x`
        [t @ .., n]
            if t.iter()
                .all(|w| matches!(*w, "long" | "short" | "int" | "char")) =>
        {
            (t.join(" "), Some((*n).to_string()))
        }
        _ => return Err(format!("cannot read the parameter `{text}`")),
    };
    let base = if words.contains(&"unsigned") {
        format!("unsigned {base}")
    } else {
        base
    };
    Ok(Param {
        text: text.to_string(),
        base,
        pointer,
        name,
    })
}

/// Parses `ret name(params)` (without the `;`), where the name has one of `prefixes`;
/// Ok(None) when the text is not such a declaration.
pub(crate) fn parse_decl(text: &str, prefixes: &[&str]) -> Result<Option<Decl>, String> {
    let text = squash(text);
    let Some(open) = text.find('(') else {
        return Ok(None);
    };
    if !text.ends_with(')') {
        return Ok(None);
    }
    let head = text[..open].trim_end();
    let Some(sp) = head.rfind([' ', '*']) else {
        return Ok(None);
    };
    let name = head[sp + 1..].to_string();
    if !is_ident(&name) || !prefixes.iter().any(|p| name.starts_with(p)) {
        return Ok(None);
    }
    let ret = squash(&head[..=sp].replace('*', " * ")).replace(" *", "*");
    let ret = ret.trim().to_string();
    if ret.is_empty() {
        return Ok(None);
    }
    let inner = &text[open + 1..text.len() - 1];
    let mut params = Vec::new();
    let mut variadic = false;
    let parts = split_params(inner);
    if !(parts.len() == 1 && (parts[0] == "void" || parts[0].is_empty())) {
        for (i, p) in parts.iter().enumerate() {
            if p == "..." {
                if i + 1 != parts.len() {
                    return Err(format!("{name}: `...` before the last parameter"));
                }
                variadic = true;
            } else {
                params.push(parse_param(p).map_err(|e| format!("{name}: {e}"))?);
            }
        }
    }
    Ok(Some(Decl {
        ret,
        name,
        params,
        variadic,
    }))
}

/// C source without comments; line structure kept.
pub(crate) fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        if in_str {
            if b[i] == b'\\' && i + 1 < b.len() {
                out.push(b[i] as char);
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if b[i] == b'"' {
                in_str = false;
            }
            out.push(b[i] as char);
            i += 1;
        } else if b[i] == b'"' {
            in_str = true;
            out.push('"');
            i += 1;
        } else if b[i..].starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            for &c in &b[i..end] {
                if c == b'\n' {
                    out.push('\n');
                }
            }
            out.push(' ');
            i = end;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// The prototypes of functions named with one of `prefixes` that a C header
/// declares, in order (typedefs, macros and definitions left out).
pub(crate) fn header_decls(src: &str, prefixes: &[&str]) -> Result<Vec<Decl>, String> {
    let text = strip_comments(src);
    // preprocessor lines (with their continuations) go
    let mut code = String::new();
    let mut cont = false;
    for line in text.lines() {
        let t = line.trim_start();
        if cont || t.starts_with('#') {
            cont = line.trim_end().ends_with('\\');
            code.push('\n');
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    let mut out = Vec::new();
    for chunk in code.split(';') {
        let chunk = match chunk.rfind(['{', '}']) {
            Some(i) => &chunk[i + 1..],
            None => chunk,
        };
        let chunk = chunk.trim();
        if chunk.starts_with("typedef") || chunk.is_empty() {
            continue;
        }
        let chunk = chunk.strip_prefix("extern ").unwrap_or(chunk);
        if let Some(d) = parse_decl(chunk, prefixes)? {
            out.push(d);
        }
    }
    Ok(out)
}

/// One entry of `src/mpi31.txt` with the section it is listed under.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub(crate) section: String,
    pub(crate) decl: Decl,
}

/// Reads `src/mpi31.txt`: `# comment` lines, `## section` lines and prototypes, one a
/// line, without `;`.
pub(crate) fn read_list(src: &str) -> Result<Vec<Listed>, String> {
    let mut section = String::new();
    let mut out: Vec<Listed> = Vec::new();
    for (n, line) in src.lines().enumerate() {
        let line = line.trim();
        if let Some(s) = line.strip_prefix("## ") {
            section = s.trim().to_string();
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let d = parse_decl(line.trim_end_matches(';'), &["MPI_"])
            .map_err(|e| format!("mpi31.txt line {}: {e}", n + 1))?
            .ok_or_else(|| format!("mpi31.txt line {}: not a prototype: {line}", n + 1))?;
        if out.iter().any(|l| l.decl.name == d.name) {
            return Err(format!("mpi31.txt line {}: {} twice", n + 1, d.name));
        }
        out.push(Listed {
            section: section.clone(),
            decl: d,
        });
    }
    Ok(out)
}

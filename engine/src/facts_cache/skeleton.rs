//! The entry encodings: what a pack stores of one file's facts, in two entries. The
//! *skeleton* is what the resolver needs of a context file (everything but references and
//! entity content hashes) and is all most look-ups decode; the *references* entry holds
//! the rest, so that an unchanged file a patch re-resolves is loaded whole rather than
//! parsed again. Each encoding opens with a tag byte, so a damaged index that points one
//! kind of entry at the other is refused rather than misread.

use batho_schema::{Language, NodeFlags, NodeKind};
use batho_storage::StoredHash;

use crate::extract::{
    Base, Entity, FileFacts, GuardBlock, Include, MacroArguments, MacroCall, NO_ENTITY, Ref,
    RefKind, RefSite, Sym,
};

/// First byte of an encoded skeleton.
const SKELETON_TAG: u8 = b'S';
/// First byte of an encoded references entry.
const REFS_TAG: u8 = b'R';

/// Why an encoded skeleton was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes end before the skeleton does.
    #[error("skeleton truncated at byte {0}")]
    Truncated(usize),
    /// A field holds a value no encoder writes (an unknown kind, an index out of range,
    /// text that is not UTF-8, string ends that go backwards).
    #[error("invalid skeleton: {0}")]
    Invalid(&'static str),
}

/// Appends the skeleton of `f` (everything but references and entity content hashes).
pub fn encode_skeleton(f: &FileFacts, out: &mut Vec<u8>) {
    let u32s = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    out.push(SKELETON_TAG);
    out.push(f.language.code());
    u32s(out, f.parse_errors);
    out.extend_from_slice(&f.bytes.to_le_bytes());
    u32s(out, f.lines);
    out.extend_from_slice(&f.content_hash);
    u32s(out, f.text.len() as u32);
    out.extend_from_slice(f.text.as_bytes());
    u32s(out, f.ends.len() as u32);
    for &e in &f.ends {
        u32s(out, e);
    }
    u32s(out, f.entities.len() as u32);
    for e in &f.entities {
        out.extend_from_slice(&[e.kind.code(), e.flags.0, e.bits, e.params]);
        for v in [
            e.name.0,
            e.qual.0,
            e.parent,
            e.type_name.0,
            e.signature.0,
            e.doc.0,
            e.start_line,
            e.end_line,
            e.start_byte,
            e.end_byte,
        ] {
            u32s(out, v);
        }
    }
    u32s(out, f.bases.len() as u32);
    for b in &f.bases {
        for v in [b.entity, b.name.0, b.line] {
            u32s(out, v);
        }
    }
    u32s(out, f.includes.len() as u32);
    for i in &f.includes {
        u32s(out, i.path.0);
        out.push(i.system as u8);
        u32s(out, i.line);
    }
    u32s(out, f.guards.len() as u32);
    for g in &f.guards {
        for v in [g.name.0, g.start_line, g.end_line] {
            u32s(out, v);
        }
    }
    u32s(out, f.macro_calls.len() as u32);
    for call in &f.macro_calls {
        u32s(out, call.macro_entity);
        u32s(out, call.name.0);
        u32s(out, call.within.0);
        out.push(call.argument);
    }
    u32s(out, f.macro_arguments.len() as u32);
    for arguments in &f.macro_arguments {
        u32s(out, arguments.macro_entity);
        out.extend_from_slice(&arguments.unused.to_le_bytes());
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(DecodeError::Truncated(self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    /// A count of items of at least `min_size` bytes each, refused when the rest of the
    /// input cannot hold that many (no huge allocation from a corrupt count).
    fn count(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size) > self.b.len() - self.at {
            return Err(DecodeError::Truncated(self.at));
        }
        Ok(n)
    }
}

/// Decodes a skeleton written by [`encode_skeleton`] for the file at `path`. Never panics;
/// every index is checked, so the result is safe to hand to the resolver.
pub fn decode_skeleton(path: &str, bytes: &[u8]) -> Result<FileFacts, DecodeError> {
    let mut c = Cursor { b: bytes, at: 0 };
    if c.u8()? != SKELETON_TAG {
        return Err(DecodeError::Invalid("not a skeleton"));
    }
    let language = Language::from_code(c.u8()?).ok_or(DecodeError::Invalid("language"))?;
    let parse_errors = c.u32()?;
    let size = c.u64()?;
    let lines = c.u32()?;
    let mut content_hash = [0; 32];
    content_hash.copy_from_slice(c.take(32)?);
    let text_len = c.count(1)?;
    let text = std::str::from_utf8(c.take(text_len)?)
        .map_err(|_| DecodeError::Invalid("text is not UTF-8"))?
        .to_owned();
    let n_ends = c.count(4)?;
    let mut ends = Vec::with_capacity(n_ends);
    let mut prev = 0;
    for _ in 0..n_ends {
        let e = c.u32()?;
        if e < prev || e as usize > text.len() || !text.is_char_boundary(e as usize) {
            return Err(DecodeError::Invalid("string ends"));
        }
        prev = e;
        ends.push(e);
    }
    if ends.first() != Some(&0) {
        return Err(DecodeError::Invalid("string ends"));
    }
    let sym = |v: u32| -> Result<Sym, DecodeError> {
        if (v as usize) < ends.len() {
            Ok(Sym(v))
        } else {
            Err(DecodeError::Invalid("string index"))
        }
    };
    let n_ent = c.count(44)?;
    let mut entities = Vec::with_capacity(n_ent);
    for _ in 0..n_ent {
        let head = c.take(4)?;
        let kind = NodeKind::from_code(head[0])
            .filter(|k| !matches!(k, NodeKind::File | NodeKind::External))
            .ok_or(DecodeError::Invalid("entity kind"))?;
        let mut v = [0u32; 10];
        for x in &mut v {
            *x = c.u32()?;
        }
        let parent = v[2];
        if parent != NO_ENTITY && parent as usize >= n_ent {
            return Err(DecodeError::Invalid("entity parent"));
        }
        entities.push(Entity {
            kind,
            flags: NodeFlags(head[1]),
            bits: head[2],
            params: head[3],
            name: sym(v[0])?,
            qual: sym(v[1])?,
            parent,
            type_name: sym(v[3])?,
            signature: sym(v[4])?,
            doc: sym(v[5])?,
            start_line: v[6],
            end_line: v[7],
            start_byte: v[8],
            end_byte: v[9],
            hash: [0; 8],
        });
    }
    let n_bases = c.count(12)?;
    let mut bases = Vec::with_capacity(n_bases);
    for _ in 0..n_bases {
        let entity = c.u32()?;
        if entity as usize >= n_ent {
            return Err(DecodeError::Invalid("base entity"));
        }
        bases.push(Base {
            entity,
            name: sym(c.u32()?)?,
            line: c.u32()?,
        });
    }
    let n_inc = c.count(9)?;
    let mut includes = Vec::with_capacity(n_inc);
    for _ in 0..n_inc {
        let path = sym(c.u32()?)?;
        let system = match c.u8()? {
            0 => false,
            1 => true,
            _ => return Err(DecodeError::Invalid("include kind")),
        };
        includes.push(Include {
            path,
            system,
            line: c.u32()?,
        });
    }
    let n_guards = c.count(12)?;
    let mut guards = Vec::with_capacity(n_guards);
    for _ in 0..n_guards {
        guards.push(GuardBlock {
            name: sym(c.u32()?)?,
            start_line: c.u32()?,
            end_line: c.u32()?,
        });
    }
    // The index of a macro entity, else `what` is invalid.
    let macro_entity = |c: &mut Cursor<'_>, what: &'static str| {
        let entity = c.u32()?;
        match entities.get(entity as usize) {
            Some(e) if e.kind == NodeKind::Macro => Ok(entity),
            _ => Err(DecodeError::Invalid(what)),
        }
    };
    let n_macro_calls = c.count(13)?;
    let mut macro_calls = Vec::with_capacity(n_macro_calls);
    for _ in 0..n_macro_calls {
        macro_calls.push(MacroCall {
            macro_entity: macro_entity(&mut c, "macro call entity")?,
            name: sym(c.u32()?)?,
            within: sym(c.u32()?)?,
            argument: c.u8()?,
        });
    }
    if macro_calls
        .windows(2)
        .any(|pair| pair[0].macro_entity > pair[1].macro_entity)
    {
        return Err(DecodeError::Invalid("macro calls out of order"));
    }
    let n_macro_arguments = c.count(12)?;
    let mut macro_arguments = Vec::with_capacity(n_macro_arguments);
    for _ in 0..n_macro_arguments {
        macro_arguments.push(MacroArguments {
            macro_entity: macro_entity(&mut c, "macro arguments entity")?,
            unused: c.u64()?,
        });
    }
    if macro_arguments
        .windows(2)
        .any(|pair| pair[0].macro_entity >= pair[1].macro_entity)
    {
        return Err(DecodeError::Invalid("macro arguments out of order"));
    }
    if c.at != bytes.len() {
        return Err(DecodeError::Invalid("trailing bytes"));
    }
    Ok(FileFacts {
        path: path.to_owned(),
        language,
        text,
        ends,
        entities,
        bases,
        includes,
        guards,
        macro_calls,
        macro_arguments,
        refs: Vec::new(),
        sites: Vec::new(),
        parse_errors,
        bytes: size,
        lines,
        content_hash,
    })
}

/// Appends the references entry of `f`: the shape of the skeleton it completes (string
/// and entity counts), the entities' content hashes and the references.
pub fn encode_refs(f: &FileFacts, out: &mut Vec<u8>) {
    let u32s = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    out.push(REFS_TAG);
    u32s(out, f.ends.len() as u32);
    u32s(out, f.entities.len() as u32);
    for e in &f.entities {
        out.extend_from_slice(&e.hash);
    }
    u32s(out, f.refs.len() as u32);
    for r in &f.refs {
        out.extend_from_slice(&[r.kind as u8, r.flags, r.arity]);
        for v in [r.enclosing, r.name.0, r.qual.0, r.recv.0, r.line] {
            u32s(out, v);
        }
    }
    u32s(out, f.sites.len() as u32);
    for s in &f.sites {
        u32s(out, s.reference);
        u32s(out, s.line);
    }
}

/// A decoded references entry, checked against its own counts; [`RefsPart::complete`]
/// joins it to the skeleton it was made with.
#[derive(Debug)]
pub struct RefsPart {
    strings: u32,
    hashes: Vec<StoredHash>,
    refs: Vec<Ref>,
    sites: Vec<RefSite>,
}

/// Bytes of one encoded reference.
const REF_LEN: usize = 23;

/// Decodes a references entry written by [`encode_refs`]. Never panics; every index is
/// checked against the counts the entry declares.
pub fn decode_refs(bytes: &[u8]) -> Result<RefsPart, DecodeError> {
    let mut c = Cursor { b: bytes, at: 0 };
    if c.u8()? != REFS_TAG {
        return Err(DecodeError::Invalid("not a references entry"));
    }
    let strings = c.u32()?;
    let n_ent = c.count(8)?;
    let mut hashes = Vec::with_capacity(n_ent);
    for _ in 0..n_ent {
        hashes.push(c.take(8)?.try_into().unwrap_or([0; 8]));
    }
    let sym = |v: u32| -> Result<Sym, DecodeError> {
        if v < strings {
            Ok(Sym(v))
        } else {
            Err(DecodeError::Invalid("string index"))
        }
    };
    let n_refs = c.count(REF_LEN)?;
    let mut refs = Vec::with_capacity(n_refs);
    for _ in 0..n_refs {
        let head = c.take(3)?;
        let kind = match head[0] {
            0 => RefKind::Call,
            1 => RefKind::Type,
            2 => RefKind::Read,
            3 => RefKind::Write,
            4 => RefKind::Expand,
            _ => return Err(DecodeError::Invalid("reference kind")),
        };
        let mut v = [0u32; 5];
        for x in &mut v {
            *x = c.u32()?;
        }
        if v[0] != NO_ENTITY && v[0] as usize >= n_ent {
            return Err(DecodeError::Invalid("enclosing entity"));
        }
        refs.push(Ref {
            kind,
            flags: head[1],
            arity: head[2],
            enclosing: v[0],
            name: sym(v[1])?,
            qual: sym(v[2])?,
            recv: sym(v[3])?,
            argument: 0,
            line: v[4],
        });
    }
    let n_sites = c.count(8)?;
    let mut sites = Vec::with_capacity(n_sites);
    for _ in 0..n_sites {
        let site = RefSite {
            reference: c.u32()?,
            line: c.u32()?,
        };
        // Sorted and naming a reference of the entry, as the extractor leaves them.
        if site.reference as usize >= refs.len() || sites.last().is_some_and(|l| *l > site) {
            return Err(DecodeError::Invalid("reference site"));
        }
        sites.push(site);
    }
    if c.at != bytes.len() {
        return Err(DecodeError::Invalid("trailing bytes"));
    }
    Ok(RefsPart {
        strings,
        hashes,
        refs,
        sites,
    })
}

impl RefsPart {
    /// Fills the references and entity hashes of `skeleton`, which must have the shape
    /// the entry was made for (else it is refused and `skeleton` is left as it was).
    pub fn complete(self, skeleton: &mut FileFacts) -> Result<(), DecodeError> {
        if self.strings as usize != skeleton.ends.len()
            || self.hashes.len() != skeleton.entities.len()
        {
            return Err(DecodeError::Invalid("references of another skeleton"));
        }
        for (e, h) in skeleton.entities.iter_mut().zip(self.hashes) {
            e.hash = h;
        }
        skeleton.refs = self.refs;
        skeleton.sites = self.sites;
        Ok(())
    }
}

//! The stored text index: an inverted index over the nodes of each layer (name,
//! qualified name, signature, the comment above the entity and file path, cut by
//! [`tokenize`]), kept as columns of the
//! nodes segment (`docs/format.md` §2.4, columns 20–27) and scored by BM25 as SQLite FTS5
//! does ([`search`]).

pub(crate) mod build;
pub(crate) mod postings;
pub mod query;
pub(crate) mod read;
pub mod search;
pub mod tokenize;
pub mod words;

#[cfg(test)]
mod tests;

//! Grammars Batho reads with: the pest grammar of BQL and the tree-sitter queries used for extraction.

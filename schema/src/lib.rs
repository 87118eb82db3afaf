//! The vocabulary of a Batho code graph.
//!
//! Node kinds, relation types, symbol-role bits, resolution strategies (with their
//! confidence tiers) and source languages, each with a stable one-byte code; and
//! temporal values as plain numbers ([`TemporalParts`]). The codes
//! are written to disk by `batho-storage` and named in queries by `batho-lang`, so this
//! crate is the one place both agree on; it depends on nothing and knows nothing of
//! files, queries or tree-sitter.
//!
//! Invariant: a code, once released, never changes meaning. New variants take new codes.

#![warn(missing_docs, unreachable_pub)]

use std::fmt;

mod temporal;

pub use temporal::TemporalParts;

macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $label:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name { $( $(#[$vmeta])* $variant = $code ),+ }

        impl $name {
            /// Every variant, in code order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The one-byte code stored on disk.
            pub const fn code(self) -> u8 { self as u8 }

            /// The variant with this on-disk code, if any.
            pub const fn from_code(code: u8) -> Option<Self> {
                match code { $( $code => Some($name::$variant), )+ _ => None }
            }

            /// The canonical name, as written in queries and shown to users.
            pub const fn name(self) -> &'static str {
                match self { $( $name::$variant => $label ),+ }
            }

            /// Parses a name case-insensitively (`"function"`, `"FUNCTION"`, `"Function"`).
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(name))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.name()) }
        }
    };
}

code_enum! {
    /// What a node of the code graph stands for.
    NodeKind {
        /// A source file (or an external header stub when its node is `External`-flagged).
        File = 0 => "File",
        /// A C++ namespace.
        Namespace = 1 => "Namespace",
        /// A C++ class.
        Class = 2 => "Class",
        /// A C or C++ struct.
        Struct = 3 => "Struct",
        /// A union.
        Union = 4 => "Union",
        /// An enum (scoped or not).
        Enum = 5 => "Enum",
        /// One constant of an enum.
        Enumerator = 6 => "Enumerator",
        /// A free function.
        Function = 7 => "Function",
        /// A member function, defined in its class or out of line.
        Method = 8 => "Method",
        /// A data member of a struct, class or union.
        Field = 9 => "Field",
        /// A global or file-static variable.
        Variable = 10 => "Variable",
        /// A typedef or `using` alias.
        Typedef = 11 => "Typedef",
        /// A preprocessor macro definition.
        Macro = 12 => "Macro",
        /// A symbol used but not defined in the repository (libc, system headers, unresolved names).
        External = 13 => "External",
    }
}

code_enum! {
    /// The type of a relationship (edge).
    RelType {
        /// File, namespace or class to a member it contains.
        Contains = 0 => "CONTAINS",
        /// A function or method calls another.
        Calls = 1 => "CALLS",
        /// A file includes another (`IMPORTS` in the tool contract).
        Includes = 2 => "INCLUDES",
        /// A class or struct derives from another.
        Inherits = 3 => "INHERITS",
        /// A method overrides a virtual method of a base class.
        Overrides = 4 => "OVERRIDES",
        /// A use of a type.
        References = 5 => "REFERENCES",
        /// A read of a variable or field.
        Reads = 6 => "READS",
        /// A write to a variable or field.
        Writes = 7 => "WRITES",
        /// A use of a macro.
        Expands = 8 => "EXPANDS",
    }
}

impl RelType {
    /// Parses a relation name, accepting the tool contract's aliases
    /// (`IMPORTS` for `INCLUDES`) as well as the canonical names, case-insensitively.
    pub fn from_name_or_alias(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("IMPORTS") {
            return Some(RelType::Includes);
        }
        Self::from_name(name)
    }
}

code_enum! {
    /// How a relationship's target was found; each strategy has a fixed confidence tier.
    Strategy {
        /// Captured directly from the syntax tree: no name lookup involved.
        Direct = 0 => "direct",
        /// Exactly one definition with that name is visible.
        ExactMatch = 1 => "exact_match",
        /// A libc or C++ standard library symbol.
        StdlibMethod = 2 => "stdlib_method",
        /// Resolved through the `#include` graph.
        ImportMap = 3 => "import_map",
        /// Resolved by walking enclosing scopes outward.
        ParentChain = 4 => "parent_chain",
        /// Resolved through the caller's namespace or class scope.
        ScopeQualified = 5 => "scope_qualified",
        /// `obj.method()` resolved through the declared type of `obj`.
        ReceiverType = 6 => "receiver_type",
        /// Several equally plausible candidates; an edge is kept to each.
        Ambiguous = 7 => "ambiguous",
        /// No definition found; the target is an `External` stub.
        Unresolved = 8 => "unresolved",
    }
}

impl Strategy {
    /// The confidence tier of the specification for this strategy.
    pub const fn confidence(self) -> f32 {
        match self {
            Strategy::Direct => 1.0,
            Strategy::ExactMatch => 0.95,
            Strategy::StdlibMethod => 0.90,
            Strategy::ImportMap => 0.85,
            Strategy::ParentChain => 0.75,
            Strategy::ScopeQualified => 0.70,
            Strategy::ReceiverType => 0.65,
            Strategy::Ambiguous => 0.50,
            Strategy::Unresolved => 0.0,
        }
    }
}

/// The evidence classes of the Astria tools, strongest first. Every strategy maps to one
/// ([`Strategy::provenance`]), so a class is a band of confidence tiers: the order of the
/// classes is the order of the tiers, and `detail: high` (the two strongest classes)
/// means confidence 0.95 or more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provenance {
    /// Read off the syntax tree with no name lookup (`Direct`: containment, includes,
    /// inheritance written in the source).
    Extracted,
    /// A name bound to the one definition of that name in the tree (`ExactMatch`).
    Resolved,
    /// A name bound through declarations and scope rules rather than a unique definition:
    /// the standard library's declarations, the include graph, enclosing or qualified
    /// scopes, a receiver's declared type.
    Declared,
    /// A guess: several candidates (`Ambiguous`) or none (`Unresolved`, an external stub).
    Inferred,
}

impl Provenance {
    /// Every class, strongest first.
    pub const ALL: [Provenance; 4] = [
        Provenance::Extracted,
        Provenance::Resolved,
        Provenance::Declared,
        Provenance::Inferred,
    ];

    /// The class as the Astria tools print it.
    pub const fn name(self) -> &'static str {
        match self {
            Provenance::Extracted => "EXTRACTED",
            Provenance::Resolved => "RESOLVED",
            Provenance::Declared => "DECLARED",
            Provenance::Inferred => "INFERRED",
        }
    }

    /// Whether `detail: high` keeps facts of this class: the two strongest classes,
    /// EXTRACTED and RESOLVED (confidence 0.95 or more; the seed's words are "EXTRACTED
    /// and DECLARED", the two strongest in its order, and Batho's DECLARED binds through
    /// scope rules at 0.65–0.90, below a unique definition's 0.95).
    pub fn is_high_detail(self) -> bool {
        self <= Provenance::Resolved
    }

    /// The lowest confidence a relationship of this class has (the lowest tier among the
    /// strategies that map to it): `confidence >= Resolved.lowest_confidence()` keeps the
    /// two strongest classes, what `detail: high` asks for.
    pub fn lowest_confidence(self) -> f32 {
        Strategy::ALL
            .iter()
            .filter(|strategy| strategy.provenance() == self)
            .map(|strategy| strategy.confidence())
            .fold(f32::INFINITY, f32::min)
    }

    /// The class of a relationship of confidence `confidence` (a strategy's tier).
    pub fn of_confidence(confidence: f64) -> Provenance {
        Strategy::ALL
            .iter()
            .find(|s| confidence >= f64::from(s.confidence()) - 1e-6)
            .map_or(Provenance::Inferred, |s| s.provenance())
    }
}

impl Strategy {
    /// The evidence class of relationships found this way.
    pub const fn provenance(self) -> Provenance {
        match self {
            Strategy::Direct => Provenance::Extracted,
            Strategy::ExactMatch => Provenance::Resolved,
            Strategy::StdlibMethod
            | Strategy::ImportMap
            | Strategy::ParentChain
            | Strategy::ScopeQualified
            | Strategy::ReceiverType => Provenance::Declared,
            Strategy::Ambiguous | Strategy::Unresolved => Provenance::Inferred,
        }
    }
}

code_enum! {
    /// The language a file or entity was extracted from.
    Language {
        /// C.
        C = 0 => "c",
        /// C++.
        Cpp = 1 => "cpp",
        /// Not source code (external stubs).
        Unknown = 2 => "unknown",
    }
}

/// The SymbolRole mask carried by every edge: eight SymbolRole bits, then Batho's own
/// (bit 8, [`Roles::INACTIVE`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Roles(pub u16);

impl Roles {
    /// The relationship defines its target.
    pub const DEFINITION: Roles = Roles(1);
    /// An import (`#include`).
    pub const IMPORT: Roles = Roles(2);
    /// The target is written.
    pub const WRITE_ACCESS: Roles = Roles(4);
    /// The target is read.
    pub const READ_ACCESS: Roles = Roles(8);
    /// The use comes from generated code (a macro expansion).
    pub const GENERATED: Roles = Roles(16);
    /// The relationship links a declaration, not a definition.
    pub const DECLARATION: Roles = Roles(32);
    /// Dynamic dispatch: function pointers, struct-field callbacks, virtual calls.
    pub const DYNAMIC: Roles = Roles(64);
    /// Inferred by a heuristic rather than read off the syntax.
    pub const HEURISTIC: Roles = Roles(128);
    /// Written in code the build's configuration leaves out: an inactive `#if` branch, or
    /// an argument that the active definition of the macro invoked drops.
    pub const INACTIVE: Roles = Roles(256);
    /// No role.
    pub const NONE: Roles = Roles(0);

    /// Each role bit with its canonical name, lowest bit first.
    pub const NAMED: [(Roles, &'static str); 9] = [
        (Roles::DEFINITION, "Definition"),
        (Roles::IMPORT, "Import"),
        (Roles::WRITE_ACCESS, "WriteAccess"),
        (Roles::READ_ACCESS, "ReadAccess"),
        (Roles::GENERATED, "Generated"),
        (Roles::DECLARATION, "Declaration"),
        (Roles::DYNAMIC, "Dynamic"),
        (Roles::HEURISTIC, "Heuristic"),
        (Roles::INACTIVE, "Inactive"),
    ];

    /// Whether every bit of `other` is set in `self`.
    pub const fn contains(self, other: Roles) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any bit of `other` is set in `self`.
    pub const fn intersects(self, other: Roles) -> bool {
        self.0 & other.0 != 0
    }

    /// Parses one role name case-insensitively.
    pub fn from_name(name: &str) -> Option<Roles> {
        Self::NAMED
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(r, _)| *r)
    }

    /// The names of the set bits, lowest first.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMED
            .into_iter()
            .filter(move |(r, _)| self.contains(*r))
            .map(|(_, n)| n)
    }

    /// Comma-separated list of every valid role name, for error messages.
    pub fn valid_names() -> String {
        Self::NAMED
            .iter()
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::ops::BitOr for Roles {
    type Output = Roles;
    fn bitor(self, rhs: Roles) -> Roles {
        Roles(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Roles {
    fn bitor_assign(&mut self, rhs: Roles) {
        self.0 |= rhs.0;
    }
}

/// Flags of a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeFlags(pub u8);

impl NodeFlags {
    /// Visible outside its translation unit (declared in a header, or not `static`).
    pub const EXPORTED: NodeFlags = NodeFlags(1);
    /// Declared `static` (internal linkage).
    pub const STATIC: NodeFlags = NodeFlags(2);
    /// Only declared here (a prototype or forward declaration), not defined.
    pub const DECLARATION_ONLY: NodeFlags = NodeFlags(4);
    /// A virtual (or pure virtual) method.
    pub const VIRTUAL: NodeFlags = NodeFlags(8);
    /// An external header file stub (`File` kind) or standard-library symbol.
    pub const SYSTEM: NodeFlags = NodeFlags(16);
    /// A `File` whose syntax tree had errors tree-sitter recovered from: its facts may
    /// miss what the damaged lines held.
    pub const SYNTAX_ERRORS: NodeFlags = NodeFlags(32);
    /// Defined in a branch that the build's configuration (`compile_commands.json` or
    /// `batho.yaml`'s `defines:`) leaves out. Never set without a configuration.
    pub const INACTIVE: NodeFlags = NodeFlags(64);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: NodeFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for NodeFlags {
    type Output = NodeFlags;
    fn bitor(self, rhs: NodeFlags) -> NodeFlags {
        NodeFlags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for NodeFlags {
    fn bitor_assign(&mut self, rhs: NodeFlags) {
        self.0 |= rhs.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for k in NodeKind::ALL {
            assert_eq!(NodeKind::from_code(k.code()), Some(*k));
            assert_eq!(NodeKind::from_name(&k.name().to_lowercase()), Some(*k));
        }
        for r in RelType::ALL {
            assert_eq!(RelType::from_code(r.code()), Some(*r));
        }
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_code(s.code()), Some(*s));
        }
        assert_eq!(NodeKind::from_code(200), None);
    }

    #[test]
    fn confidence_tiers_are_strictly_decreasing() {
        let tiers: Vec<f32> = Strategy::ALL.iter().map(|s| s.confidence()).collect();
        assert!(tiers.windows(2).all(|w| w[0] > w[1]), "{tiers:?}");
    }

    #[test]
    fn provenance_classes_are_bands_of_confidence() {
        // Strategies are listed by falling confidence; their classes must not rise.
        let classes: Vec<Provenance> = Strategy::ALL.iter().map(|s| s.provenance()).collect();
        assert!(classes.windows(2).all(|w| w[0] <= w[1]), "{classes:?}");
        for s in Strategy::ALL {
            assert_eq!(
                Provenance::of_confidence(f64::from(s.confidence())),
                s.provenance()
            );
        }
        assert_eq!(Provenance::of_confidence(0.3), Provenance::Inferred);
        assert_eq!(
            Provenance::ALL.iter().map(|p| p.name()).collect::<Vec<_>>(),
            ["EXTRACTED", "RESOLVED", "DECLARED", "INFERRED"]
        );
        // `detail: high` (EXTRACTED and RESOLVED) keeps confidence 0.95 and more.
        assert_eq!(Provenance::Resolved.lowest_confidence(), 0.95);
        assert_eq!(Provenance::Extracted.lowest_confidence(), 1.0);
        assert_eq!(Provenance::Inferred.lowest_confidence(), 0.0);
        let high: Vec<Provenance> = Provenance::ALL
            .into_iter()
            .filter(|class| class.is_high_detail())
            .collect();
        assert_eq!(high, [Provenance::Extracted, Provenance::Resolved]);
        for class in Provenance::ALL {
            assert_eq!(
                class.is_high_detail(),
                class.lowest_confidence() >= Provenance::Resolved.lowest_confidence()
            );
        }
    }

    #[test]
    fn roles_parse_case_insensitively() {
        assert_eq!(Roles::from_name("writeaccess"), Some(Roles::WRITE_ACCESS));
        assert_eq!(Roles::from_name("WRITEACCESS"), Some(Roles::WRITE_ACCESS));
        assert_eq!(Roles::from_name("nope"), None);
        let r = Roles::DYNAMIC | Roles::READ_ACCESS;
        assert_eq!(r.names().collect::<Vec<_>>(), ["ReadAccess", "Dynamic"]);
        assert_eq!(
            RelType::from_name_or_alias("imports"),
            Some(RelType::Includes)
        );
    }
}

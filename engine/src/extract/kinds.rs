//! A dense table from tree-sitter node-kind ids to the handful of kinds the walker
//! distinguishes, built once per grammar so the walk dispatches on a byte instead of
//! comparing kind strings at every node.

use tree_sitter::Language;

/// The node kinds the walker treats specially; everything else is [`K::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum K {
    Other,
    /// Leaves and subtrees that can never hold a reference (literals, comments).
    Skip,
    TranslationUnit,
    DeclarationList,
    PreprocIf,
    PreprocElse,
    PreprocDef,
    PreprocFunctionDef,
    PreprocInclude,
    PreprocCall,
    PreprocDefined,
    FunctionDefinition,
    Declaration,
    FieldDeclaration,
    TypeDefinition,
    AliasDeclaration,
    StructSpecifier,
    ClassSpecifier,
    UnionSpecifier,
    EnumSpecifier,
    FieldDeclarationList,
    EnumeratorList,
    Enumerator,
    NamespaceDefinition,
    LinkageSpecification,
    TemplateDeclaration,
    CompoundStatement,
    ForStatement,
    CallExpression,
    FieldExpression,
    AssignmentExpression,
    UpdateExpression,
    Identifier,
    FieldIdentifier,
    TypeIdentifier,
    QualifiedIdentifier,
    TemplateFunction,
    TemplateType,
    Error,
    FunctionDeclarator,
    PointerDeclarator,
    ReferenceDeclarator,
    ParenthesizedDeclarator,
    AttributedDeclarator,
    ArrayDeclarator,
    InitDeclarator,
    ParameterList,
    ParameterDeclaration,
    BaseClassClause,
    StorageClassSpecifier,
    Virtual,
    This,
    LambdaExpression,
    ParenthesizedExpression,
    PointerExpression,
    DestructorName,
    OperatorName,
    NamespaceIdentifier,
    AccessSpecifier,
    LabeledStatement,
    ForRangeLoop,
    PrimitiveType,
    FieldInitializerList,
    FriendDeclaration,
    PreprocArg,
}

impl K {
    fn from_name(name: &str, named: bool) -> K {
        if !named {
            return match name {
                "virtual" => K::Virtual,
                _ => K::Other,
            };
        }
        match name {
            "comment"
            | "string_literal"
            | "raw_string_literal"
            | "char_literal"
            | "number_literal"
            | "concatenated_string"
            | "system_lib_string"
            | "true"
            | "false"
            | "null"
            | "nullptr"
            | "escape_sequence"
            | "string_content"
            | "user_defined_literal" => K::Skip,
            "translation_unit" => K::TranslationUnit,
            "declaration_list" => K::DeclarationList,
            "preproc_if" | "preproc_ifdef" | "preproc_elif" | "preproc_elifdef" => K::PreprocIf,
            "preproc_else" => K::PreprocElse,
            "preproc_def" => K::PreprocDef,
            "preproc_function_def" => K::PreprocFunctionDef,
            "preproc_include" => K::PreprocInclude,
            "preproc_call" => K::PreprocCall,
            "preproc_defined" => K::PreprocDefined,
            "preproc_arg" => K::PreprocArg,
            "function_definition" => K::FunctionDefinition,
            "declaration" => K::Declaration,
            "field_declaration" => K::FieldDeclaration,
            "type_definition" => K::TypeDefinition,
            "alias_declaration" => K::AliasDeclaration,
            "struct_specifier" => K::StructSpecifier,
            "class_specifier" => K::ClassSpecifier,
            "union_specifier" => K::UnionSpecifier,
            "enum_specifier" => K::EnumSpecifier,
            "field_declaration_list" => K::FieldDeclarationList,
            "enumerator_list" => K::EnumeratorList,
            "enumerator" => K::Enumerator,
            "namespace_definition" => K::NamespaceDefinition,
            "linkage_specification" => K::LinkageSpecification,
            "template_declaration" => K::TemplateDeclaration,
            "compound_statement" => K::CompoundStatement,
            "for_statement" => K::ForStatement,
            "for_range_loop" => K::ForRangeLoop,
            "call_expression" => K::CallExpression,
            "field_expression" => K::FieldExpression,
            "assignment_expression" => K::AssignmentExpression,
            "update_expression" => K::UpdateExpression,
            "identifier" => K::Identifier,
            "field_identifier" => K::FieldIdentifier,
            "type_identifier" => K::TypeIdentifier,
            "qualified_identifier" => K::QualifiedIdentifier,
            "template_function" => K::TemplateFunction,
            "template_type" => K::TemplateType,
            "ERROR" => K::Error,
            "function_declarator" => K::FunctionDeclarator,
            "pointer_declarator" => K::PointerDeclarator,
            "reference_declarator" => K::ReferenceDeclarator,
            "parenthesized_declarator" => K::ParenthesizedDeclarator,
            "attributed_declarator" => K::AttributedDeclarator,
            "array_declarator" => K::ArrayDeclarator,
            "init_declarator" => K::InitDeclarator,
            "parameter_list" => K::ParameterList,
            "parameter_declaration" | "optional_parameter_declaration" => K::ParameterDeclaration,
            "base_class_clause" => K::BaseClassClause,
            "storage_class_specifier" => K::StorageClassSpecifier,
            "virtual" => K::Virtual,
            "this" => K::This,
            "lambda_expression" => K::LambdaExpression,
            "parenthesized_expression" => K::ParenthesizedExpression,
            "pointer_expression" => K::PointerExpression,
            "destructor_name" => K::DestructorName,
            "operator_name" => K::OperatorName,
            "namespace_identifier" => K::NamespaceIdentifier,
            "access_specifier" => K::AccessSpecifier,
            "labeled_statement" => K::LabeledStatement,
            "primitive_type" => K::PrimitiveType,
            "field_initializer_list" => K::FieldInitializerList,
            "friend_declaration" => K::FriendDeclaration,
            _ => K::Other,
        }
    }
}

/// Kind table and field ids of one grammar.
pub(crate) struct KindTable {
    kinds: Vec<K>,
    /// The grammar's keywords (anonymous tokens spelled like identifiers), sorted: a name
    /// spelled like one may lex as the keyword.
    pub(crate) keywords: Vec<Box<str>>,
    pub(crate) f_declarator: u16,
    pub(crate) f_body: u16,
    pub(crate) f_type: u16,
    pub(crate) f_name: u16,
    pub(crate) f_value: u16,
    pub(crate) f_function: u16,
    pub(crate) f_arguments: u16,
    pub(crate) f_argument: u16,
    pub(crate) f_field: u16,
    pub(crate) f_left: u16,
    pub(crate) f_scope: u16,
    pub(crate) f_parameters: u16,
    pub(crate) f_path: u16,
}

impl KindTable {
    pub(crate) fn new(lang: &Language) -> KindTable {
        let n = lang.node_kind_count();
        let mut kinds = Vec::with_capacity(n);
        let mut keywords = Vec::new();
        for id in 0..n {
            let id16 = u16::try_from(id).unwrap_or(u16::MAX);
            let k = match lang.node_kind_for_id(id16) {
                Some(name) => {
                    let named = lang.node_kind_is_named(id16);
                    let word = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
                    if !named && word {
                        keywords.push(Box::from(name));
                    }
                    K::from_name(name, named)
                }
                None => K::Other,
            };
            kinds.push(k);
        }
        keywords.sort_unstable();
        keywords.dedup();
        let f = |name: &str| {
            lang.field_id_for_name(name)
                .map(|x| x.get())
                .unwrap_or(u16::MAX)
        };
        KindTable {
            kinds,
            keywords,
            f_declarator: f("declarator"),
            f_body: f("body"),
            f_type: f("type"),
            f_name: f("name"),
            f_value: f("value"),
            f_function: f("function"),
            f_arguments: f("arguments"),
            f_argument: f("argument"),
            f_field: f("field"),
            f_left: f("left"),
            f_scope: f("scope"),
            f_parameters: f("parameters"),
            f_path: f("path"),
        }
    }

    #[inline]
    pub(crate) fn of(&self, node: &tree_sitter::Node<'_>) -> K {
        // The "ERROR" kind id is u16::MAX and sits outside the table (one call into
        // tree-sitter per node rather than two: `is_error` reads the same symbol).
        match node.kind_id() {
            u16::MAX => K::Error,
            id => self.kinds.get(usize::from(id)).copied().unwrap_or(K::Other),
        }
    }
}

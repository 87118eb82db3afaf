//! A dense table from tree-sitter node-kind ids to the handful of kinds the walker
//! distinguishes, built once per grammar so the walk dispatches on a byte instead of
//! comparing kind strings at every node.

use tree_sitter::Language;

/// The node kinds the walker treats specially; everything else is [`SyntaxKind::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SyntaxKind {
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

impl SyntaxKind {
    fn from_name(name: &str, named: bool) -> SyntaxKind {
        if !named {
            return match name {
                "virtual" => SyntaxKind::Virtual,
                _ => SyntaxKind::Other,
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
            | "user_defined_literal" => SyntaxKind::Skip,
            "translation_unit" => SyntaxKind::TranslationUnit,
            "declaration_list" => SyntaxKind::DeclarationList,
            "preproc_if" | "preproc_ifdef" | "preproc_elif" | "preproc_elifdef" => {
                SyntaxKind::PreprocIf
            }
            "preproc_else" => SyntaxKind::PreprocElse,
            "preproc_def" => SyntaxKind::PreprocDef,
            "preproc_function_def" => SyntaxKind::PreprocFunctionDef,
            "preproc_include" => SyntaxKind::PreprocInclude,
            "preproc_call" => SyntaxKind::PreprocCall,
            "preproc_defined" => SyntaxKind::PreprocDefined,
            "preproc_arg" => SyntaxKind::PreprocArg,
            "function_definition" => SyntaxKind::FunctionDefinition,
            "declaration" => SyntaxKind::Declaration,
            "field_declaration" => SyntaxKind::FieldDeclaration,
            "type_definition" => SyntaxKind::TypeDefinition,
            "alias_declaration" => SyntaxKind::AliasDeclaration,
            "struct_specifier" => SyntaxKind::StructSpecifier,
            "class_specifier" => SyntaxKind::ClassSpecifier,
            "union_specifier" => SyntaxKind::UnionSpecifier,
            "enum_specifier" => SyntaxKind::EnumSpecifier,
            "field_declaration_list" => SyntaxKind::FieldDeclarationList,
            "enumerator_list" => SyntaxKind::EnumeratorList,
            "enumerator" => SyntaxKind::Enumerator,
            "namespace_definition" => SyntaxKind::NamespaceDefinition,
            "linkage_specification" => SyntaxKind::LinkageSpecification,
            "template_declaration" => SyntaxKind::TemplateDeclaration,
            "compound_statement" => SyntaxKind::CompoundStatement,
            "for_statement" => SyntaxKind::ForStatement,
            "for_range_loop" => SyntaxKind::ForRangeLoop,
            "call_expression" => SyntaxKind::CallExpression,
            "field_expression" => SyntaxKind::FieldExpression,
            "assignment_expression" => SyntaxKind::AssignmentExpression,
            "update_expression" => SyntaxKind::UpdateExpression,
            "identifier" => SyntaxKind::Identifier,
            "field_identifier" => SyntaxKind::FieldIdentifier,
            "type_identifier" => SyntaxKind::TypeIdentifier,
            "qualified_identifier" => SyntaxKind::QualifiedIdentifier,
            "template_function" => SyntaxKind::TemplateFunction,
            "template_type" => SyntaxKind::TemplateType,
            "ERROR" => SyntaxKind::Error,
            "function_declarator" => SyntaxKind::FunctionDeclarator,
            "pointer_declarator" => SyntaxKind::PointerDeclarator,
            "reference_declarator" => SyntaxKind::ReferenceDeclarator,
            "parenthesized_declarator" => SyntaxKind::ParenthesizedDeclarator,
            "attributed_declarator" => SyntaxKind::AttributedDeclarator,
            "array_declarator" => SyntaxKind::ArrayDeclarator,
            "init_declarator" => SyntaxKind::InitDeclarator,
            "parameter_list" => SyntaxKind::ParameterList,
            "parameter_declaration" | "optional_parameter_declaration" => {
                SyntaxKind::ParameterDeclaration
            }
            "base_class_clause" => SyntaxKind::BaseClassClause,
            "storage_class_specifier" => SyntaxKind::StorageClassSpecifier,
            "virtual" => SyntaxKind::Virtual,
            "this" => SyntaxKind::This,
            "lambda_expression" => SyntaxKind::LambdaExpression,
            "parenthesized_expression" => SyntaxKind::ParenthesizedExpression,
            "pointer_expression" => SyntaxKind::PointerExpression,
            "destructor_name" => SyntaxKind::DestructorName,
            "operator_name" => SyntaxKind::OperatorName,
            "namespace_identifier" => SyntaxKind::NamespaceIdentifier,
            "access_specifier" => SyntaxKind::AccessSpecifier,
            "labeled_statement" => SyntaxKind::LabeledStatement,
            "primitive_type" => SyntaxKind::PrimitiveType,
            "field_initializer_list" => SyntaxKind::FieldInitializerList,
            "friend_declaration" => SyntaxKind::FriendDeclaration,
            _ => SyntaxKind::Other,
        }
    }
}

/// Kind table and field ids of one grammar.
pub(crate) struct KindTable {
    kinds: Vec<SyntaxKind>,
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
                    SyntaxKind::from_name(name, named)
                }
                None => SyntaxKind::Other,
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
    pub(crate) fn of(&self, node: &tree_sitter::Node<'_>) -> SyntaxKind {
        // The "ERROR" kind id is u16::MAX and sits outside the table (one call into
        // tree-sitter per node rather than two: `is_error` reads the same symbol).
        match node.kind_id() {
            u16::MAX => SyntaxKind::Error,
            id => self
                .kinds
                .get(usize::from(id))
                .copied()
                .unwrap_or(SyntaxKind::Other),
        }
    }
}

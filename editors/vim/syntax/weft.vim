" Vim syntax file
" Language:   weft (a declarative language for InfiniBand fabrics)
" Filenames:  *.weft
"
" Reserved words are keywords; contextual keywords (switch hca router link topology faults
" down on and the section words) are matches that only fire where the grammar puts a
" keyword, so `switch: sb7800`, `hca.ports` or `let down = 0` stay plain names.
" Priority: keywords beat matches; among matches and regions starting at the same column the
" one defined last wins, so the more specific items come later in this file.

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
syn sync fromstart

" ---- names and statements (least specific first) -------------------------------------
syn match   weftAttribute     "\<\h\w*\ze\s*=\%(=\)\@!"
syn match   weftFunction      "\<\h\w*\ze\s*("
syn match   weftBuiltin       "\<\%(format\|node\|len\|prod\|sum\|min\|max\|pow\|repeat\|import\)\ze\s*("
syn match   weftField         "\.\@1<!\.\zs\h\w*"
syn match   weftNamespace     "\<\h\w*\ze\s*::"
syn match   weftLoopVar       "\<\h\w*\ze\s\+in\>"

" node kinds: `switch leaf[1..=36] : sb7800`, `hca (format(…)) : hca`, `switch "MF0;sw1"`,
" `switch spine[7] down`, and the kind in `model NAME : switch`
syn match   weftNodeKind      "\<\%(switch\|hca\|router\)\>\ze\s*[A-Za-z_\"(]"
syn match   weftNodeKind      "\%(\<model\s\+\h\w*\s*:\s*\)\@40<=\<\%(switch\|hca\|router\)\>"

" contextual statement keywords
syn match   weftKeyword       "\<link\>\ze\s*[A-Za-z_(]"
syn match   weftKeyword       "\<down\>\ze\s*\%($\|[;,}]\|//\|/\*\)"
syn match   weftKeyword       "\<topology\>\ze\s*\%(=\%(=\)\@!\|{\|$\)"
syn match   weftKeyword       "\<faults\>\ze\s*\%({\|$\)"
syn match   weftKeyword       "\<on\>\ze\s\+[^ \t=:,;.)\]}]"

" sections: `vls { … }`, `class compute { … }`, `tenant bob { … }`, `vms on …`, `vm bob.db1 on …`
syn match   weftSection       "\<\%(vls\|routing\|qos\|tenant\|class\|vms\|vm\)\>\ze\s*\%({\|\<on\>\)"
syn match   weftSection       "\<\%(vls\|routing\|qos\|tenant\|class\|vms\|vm\)\>\ze\s\+\%(on\>\)\@![A-Za-z_][A-Za-z0-9_.-]*\s*\%({\|\<on\>\)"
syn match   weftSectionName   "\%(\<\%(vls\|routing\|qos\|tenant\|class\|vms\|vm\)\s\+\)\@20<=\%(on\>\)\@![A-Za-z_][A-Za-z0-9_.-]*\ze\s*\%({\|\<on\>\)"

" declarations
syn match   weftStorage       "\<model\>"
syn match   weftModelName     "\%(\<model\s\+\)\@20<=\h\w*"
syn match   weftTemplateName  "\%(\<template\s\+\)\@20<=\h\w*"
syn match   weftFabricName    "\%(\<fabric\s\+\)\@20<=\h\w*"
syn match   weftLetName       "\%(\<let\s\+\)\@20<=\h\w*"

" ---- reserved words ------------------------------------------------------------------
syn keyword weftConditional   if else
syn keyword weftRepeat        for in
syn keyword weftAssert        assert
syn keyword weftInclude       use
syn keyword weftLet           let
syn keyword weftStorage       template fabric
syn keyword weftBoolean       true false

" ---- literals and operators ----------------------------------------------------------
syn keyword weftSpeed         SDR DDR QDR FDR10 FDR EDR HDR NDR XDR
syn match   weftNumber        "\<\d[0-9_]*\>"
syn match   weftWidth         "\<\d\+x\>"
syn match   weftHex           "\<0x\x[0-9A-Fa-f_]*\>"
syn match   weftOperator      "<->\|\.\.=\=\|||\|&&\|[=!<>]=\|[-+*/%<>!=]"

" ---- argument and parameter lists ----------------------------------------------------
syn cluster weftExpr          contains=weftLineComment,weftBlockComment,weftString,weftConditional,weftBoolean,weftSpeed,weftNumber,weftWidth,weftHex,weftOperator,weftFunction,weftBuiltin,weftField,weftParen
syn region  weftParen         matchgroup=weftDelimiter start="(" end=")" contains=@weftExpr,weftNamedArg,weftParamType
syn match   weftNamedArg      "\<\h\w*\ze\s*:\%(:\)\@!" contained
syn match   weftParamType     "\%(:\s*\)\@20<=\<\%(int\|str\|bool\|list\|range\|model\|node\|width\|word\)\>" contained

" braces: folding only
syn region  weftBlock         start="{" end="}" transparent fold contains=TOP

" ---- strings and comments (most specific: defined last) ------------------------------
syn match   weftEscapeError   "\\." contained
syn match   weftEscape        +\\["\\nt{}]+ contained
syn match   weftPlaceholder   +{[^{}"\\]*}+ contained
syn region  weftString        start=+"+ skip=+\\\\\|\\"+ end=+"+ end=+$+ contains=weftEscape,weftEscapeError,weftPlaceholder,@Spell

syn keyword weftTodo          TODO FIXME XXX contained
syn region  weftLineComment   start="//" end="$" contains=weftTodo,@Spell
syn region  weftBlockComment  start="/\*" end="\*/" contains=weftTodo,@Spell fold

" ---- highlighting --------------------------------------------------------------------
hi def link weftTodo          Todo
hi def link weftLineComment   Comment
hi def link weftBlockComment  Comment
hi def link weftString        String
hi def link weftEscape        SpecialChar
hi def link weftEscapeError   Error
hi def link weftPlaceholder   Special
hi def link weftConditional   Conditional
hi def link weftRepeat        Repeat
hi def link weftAssert        Keyword
hi def link weftInclude       Include
hi def link weftLet           Keyword
hi def link weftKeyword       Keyword
hi def link weftSection       Keyword
hi def link weftStorage       StorageClass
hi def link weftNodeKind      StorageClass
hi def link weftModelName     Type
hi def link weftFabricName    Type
hi def link weftParamType     Type
hi def link weftTemplateName  Function
hi def link weftFunction      Function
hi def link weftBuiltin       Function
hi def link weftNamedArg      Identifier
hi def link weftAttribute     Identifier
hi def link weftLetName       Identifier
hi def link weftLoopVar       Identifier
hi def link weftSectionName   Identifier
hi def link weftNamespace     Identifier
hi def link weftBoolean       Boolean
hi def link weftSpeed         Constant
hi def link weftNumber        Number
hi def link weftWidth         Number
hi def link weftHex           Number
hi def link weftOperator      Operator
hi def link weftDelimiter     Delimiter

let b:current_syntax = "weft"

let &cpo = s:cpo_save
unlet s:cpo_save

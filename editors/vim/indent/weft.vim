" Vim indent file
" Language: weft
"
" Follows `weft fmt`: four spaces (one 'shiftwidth') per bracket `{`, `(` or `[` still open
" at the start of the line; a line starting with a closing bracket dedents first; a line
" starting with `else` or a binary operator (other than `=`) continues the statement above
" it and gets one more level. The depth at the start of a line is worked out from the
" previous code line (its indent and its brackets), so re-indenting a file top to bottom
" (`gg=G`) reproduces the formatter's layout.

if exists("b:did_indent")
  finish
endif
let b:did_indent = 1

setlocal indentexpr=GetWeftIndent(v:lnum)
setlocal indentkeys=0{,0},0),0],!^F,o,O,e,=else
setlocal autoindent nolisp nosmartindent nocindent

let b:undo_indent = "setlocal indentexpr< indentkeys< autoindent< lisp< smartindent< cindent<"

if exists("*GetWeftIndent")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

let s:binary = ['<->', '==', '!=', '<=', '>=', '&&', '||', '<', '>', '+', '-', '*', '/', '%']

" Is the first non-blank character of line `lnum` inside a block comment that started on an
" earlier line? (Needs syntax highlighting; without it the answer is no.)
function! s:InBlockComment(lnum) abort
  let col = match(getline(a:lnum), '\S') + 1
  if col == 0 || getline(a:lnum) =~ '^\s*/\*'
    return 0
  endif
  return synIDattr(synID(a:lnum, col, 0), "name") =~? 'blockcomment'
endfunction

" Brackets opened minus brackets closed on `line`, outside strings and comments.
function! s:Net(line) abort
  let net = 0
  let i = 0
  let n = strlen(a:line)
  while i < n
    let c = a:line[i]
    if c == '"'
      let i += 1
      while i < n && a:line[i] != '"'
        let i += a:line[i] == '\' ? 2 : 1
      endwhile
    elseif c == '/' && a:line[i + 1] == '/'
      break
    elseif c == '/' && a:line[i + 1] == '*'
      let e = stridx(a:line, '*/', i + 2)
      if e < 0
        break
      endif
      let i = e + 1
    elseif c =~ '[{(\[]'
      let net += 1
    elseif c =~ '[})\]]'
      let net -= 1
    endif
    let i += 1
  endwhile
  return net
endfunction

function! s:StartsWithCloser(line) abort
  return a:line =~ '^\s*[})\]]'
endfunction

function! s:Continues(line) abort
  let code = substitute(a:line, '^\s*', '', '')
  if code =~ '^else\>'
    return 1
  endif
  if code =~ '^//' || code =~ '^/\*'
    return 0
  endif
  for op in s:binary
    if strpart(code, 0, strlen(op)) ==# op
      return 1
    endif
  endfor
  return 0
endfunction

" The previous line that starts outside a block comment, skipping blank lines.
function! s:PrevCodeLine(lnum) abort
  let lnum = prevnonblank(a:lnum - 1)
  while lnum > 0 && s:InBlockComment(lnum)
    let lnum = prevnonblank(lnum - 1)
  endwhile
  return lnum
endfunction

function! GetWeftIndent(lnum) abort
  if s:InBlockComment(a:lnum)
    return -1
  endif
  let line = getline(a:lnum)
  let prev = s:PrevCodeLine(a:lnum)
  if prev == 0
    let depth = 0
  else
    let pline = getline(prev)
    let sw = shiftwidth()
    " Brackets open at the start of the previous line, recovered from its indent ...
    let depth = (indent(prev) + sw / 2) / sw + s:StartsWithCloser(pline) - s:Continues(pline)
    " ... plus those it opens or closes.
    let depth += s:Net(pline)
  endif
  let level = depth - s:StartsWithCloser(line) + s:Continues(line)
  return max([0, level]) * shiftwidth()
endfunction

let &cpo = s:cpo_save
unlet s:cpo_save

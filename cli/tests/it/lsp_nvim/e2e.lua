-- Drives Neovim's built-in LSP client against `weft lsp` (cli/tests/it/lsp_nvim.rs runs it
-- headless): opens $SAMPLE, then checks diagnostics, a quick fix, hover, a definition into
-- the standard library, completion, formatting and a diagnostic after an edit. Each result
-- is a `key<TAB>value` line of $RESULT; the Rust test asserts them. Every wait is bounded.
local result = {}
local function put(k, v) table.insert(result, k .. '\t' .. tostring(v):gsub('\n', '\\n')) end
local function finish()
  local f = io.open(os.getenv('RESULT'), 'w')
  f:write(table.concat(result, '\n') .. '\n')
  f:close()
  vim.cmd('qa!')
end
local ok, err = pcall(function()
  vim.g.weft_lsp_cmd = os.getenv('WEFT')
  package.path = os.getenv('EDITORS') .. '/nvim/lua/?.lua;' .. package.path
  require('weft')
  vim.cmd('edit ' .. os.getenv('SAMPLE'))
  local buf = vim.api.nvim_get_current_buf()
  put('filetype', vim.bo.filetype)
  local function line_of(pat)
    for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      local c = l:find(pat, 1, true)
      if c then return i - 1, c - 1 end
    end
    error('no line with ' .. pat)
  end
  local function params(pat, plus)
    local l, c = line_of(pat)
    return { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = l, character = c + (plus or 1) } }
  end
  local function request(method, p)
    local r = vim.lsp.buf_request_sync(buf, method, p, 20000) or {}
    for _, v in pairs(r) do return v.result end
  end
  local function diag_with(code)
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == code then return d end
    end
  end
  -- The diagnostics of the file as opened.
  put('attached', vim.wait(30000, function() return diag_with('weft::exclusive_node_range') ~= nil end, 50))
  local d = diag_with('weft::exclusive_node_range')
  put('range_diag', d and (d.lnum .. ':' .. d.col .. '-' .. d.end_col) or 'none')
  -- A quick fix applied: `..` → `..=`.
  local l = line_of('cn11..cn12')
  local actions = request('textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = l, character = 0 }, ['end'] = { line = l, character = 0 } },
    context = { diagnostics = {} },
  }) or {}
  for _, a in ipairs(actions) do
    if a.title:find('..=', 1, true) then vim.lsp.util.apply_workspace_edit(a.edit, 'utf-16') end
  end
  put('fixed_line', vim.api.nvim_buf_get_lines(buf, l, l + 1, false)[1])
  -- Hover on a node.
  local h = request('textDocument/hover', params('spine.p'))
  put('hover', h and h.contents.value or 'none')
  -- A definition into the standard library, jumped to.
  local def = request('textDocument/definition', params('sb7800 {'))
  put('definition', def and def.uri or 'none')
  if def then
    vim.lsp.util.jump_to_location(def, 'utf-16')
    put('jumped_to', vim.api.nvim_buf_get_name(0))
    put('jumped_line', vim.api.nvim_get_current_line())
    vim.cmd('buffer ' .. buf)
  end
  -- Completion after `engine = `.
  local c = request('textDocument/completion', params('engine = ', 9)) or {}
  local labels = {}
  for _, i in ipairs(c.items or c) do table.insert(labels, i.label) end
  put('completion', table.concat(labels, ' '))
  -- Formatting a messy line.
  local rl = line_of('routing {')
  vim.api.nvim_buf_set_lines(buf, rl, rl + 1, false, { 'routing {engine=updn}' })
  vim.lsp.buf.formatting_sync(nil, 20000)
  put('formatted', vim.api.nvim_buf_get_lines(buf, rl, rl + 1, false)[1])
  -- An edit that breaks the file: the diagnostic arrives at the right span.
  local sl, sc = line_of('spine : sb7800')
  vim.api.nvim_buf_set_text(buf, sl, sc + 8, sl, sc + 14, { 'sb780' })
  put('edited', vim.wait(30000, function() return diag_with('weft::unknown_name') ~= nil end, 50))
  local u = diag_with('weft::unknown_name')
  put('edit_diag', u and (u.lnum .. ':' .. u.col .. '-' .. u.end_col) or 'none')
end)
put('ok', ok)
if not ok then put('error', err) end
finish()

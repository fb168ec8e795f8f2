-- weft for Neovim: the `.weft` filetype and the language server (`weft lsp`).
--
-- Put this file on your runtimepath (or `dofile` it from init.lua). It works with Neovim's
-- built-in client from 0.7 (`vim.lsp.start_client`); with nvim-lspconfig, see README.md.
vim.cmd([[autocmd BufRead,BufNewFile *.weft setfiletype weft]])

local M = {}

-- Starts (or reuses) the server for the current buffer.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if not M.client_id then
    M.client_id = vim.lsp.start_client({
      name = 'weft',
      cmd = { vim.g.weft_lsp_cmd or 'weft', 'lsp' },
      root_dir = vim.fn.getcwd(),
    })
  end
  if M.client_id then
    vim.lsp.buf_attach_client(bufnr, M.client_id)
  end
  return M.client_id
end

vim.cmd([[autocmd FileType weft lua require('weft').attach()]])

return M

// The weft extension's entry: starts `weft lsp` (the language server, on stdio) for `.weft`
// files with vscode-languageclient. The grammar and language configuration are declarative
// (package.json); this file only runs the server.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('weft');
  if (!config.get('server.enable', true)) {
    return;
  }
  const command = config.get('server.path', 'weft');
  const serverOptions = {
    run: { command, args: ['lsp'] },
    debug: { command, args: ['lsp'] },
  };
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'weft' }, { scheme: 'untitled', language: 'weft' }],
  };
  client = new LanguageClient('weft', 'weft language server', serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };

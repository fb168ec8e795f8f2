//! The server's loop: the handshake, then every message in order — documents kept in full
//! (full sync), diagnostics published on each change, the proof queued on save, requests
//! answered from the latest analysis.

use crate::analysis::Document;
use crate::proof::{self, Event, Generations, Job};
use crate::stdlib::Stdlib;
use crate::{edit, navigate, Config, Error};
use crossbeam_channel::{select, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    notification as n, request as r, ProgressParams, ProgressParamsValue, PublishDiagnosticsParams,
    TextDocumentPositionParams, Url, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressEnd,
    WorkDoneProgressReport,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// What the server advertises.
pub(crate) fn capabilities() -> Value {
    json!({
        "textDocumentSync": { "openClose": true, "change": 1, "save": { "includeText": false } },
        "hoverProvider": true,
        "definitionProvider": true,
        "referencesProvider": true,
        "renameProvider": true,
        "completionProvider": { "triggerCharacters": [":", "=", " ", ".", "["] },
        "documentFormattingProvider": true,
        "documentSymbolProvider": true,
        "codeActionProvider": { "codeActionKinds": ["quickfix"] },
        "experimental": { "weftStdlibRequest": "weft/stdlib" }
    })
}

struct Server<'c> {
    conn: &'c Connection,
    std: Stdlib,
    docs: BTreeMap<Url, Document>,
    generations: Generations,
    next_generation: u64,
    jobs: Sender<Job>,
    /// `docs/codes.md` of the source tree beside the standard library, when it is there.
    codes_page: Option<Url>,
    progress: bool,
    begun: BTreeSet<String>,
    shutdown: bool,
}

/// Whether the loop goes on.
enum Flow {
    Continue,
    Exit,
}

pub(crate) fn run(conn: &Connection, config: &Config) -> Result<(), Error> {
    let Some(params) = handshake(conn)? else {
        return Ok(());
    };
    let progress = params
        .pointer("/capabilities/window/workDoneProgress")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let generations = Generations::default();
    let (jobs, job_rx) = crossbeam_channel::unbounded::<Job>();
    let (event_tx, events) = crossbeam_channel::unbounded::<Event>();
    let g = generations.clone();
    // Not joined: a proof may take long, and the server leaves without waiting for it.
    std::thread::Builder::new()
        .name("weft-lsp-proof".into())
        .spawn(move || proof::worker(&job_rx, &event_tx, &g))?;
    let mut s = Server {
        conn,
        std: Stdlib::new(config.stdlib_dir.as_deref()),
        docs: BTreeMap::new(),
        generations,
        next_generation: 0,
        jobs,
        codes_page: config
            .stdlib_dir
            .as_deref()
            .and_then(std::path::Path::parent)
            .map(|root| root.join("docs/codes.md"))
            .filter(|p| p.is_file())
            .and_then(|p| Url::from_file_path(p).ok()),
        progress,
        begun: BTreeSet::new(),
        shutdown: false,
    };
    loop {
        select! {
            recv(conn.receiver) -> m => match m {
                Ok(m) => {
                    let (m, next) = coalesce(m, &conn.receiver);
                    for m in std::iter::once(m).chain(next) {
                        if let Flow::Exit = s.message(m)? { return Ok(()) }
                    }
                }
                Err(_) => return Ok(()),
            },
            recv(events) -> e => if let Ok(e) = e { s.event(e)? },
        }
    }
}

/// While `m` changes a document and the next queued message is a newer change of the same
/// document, only the newest is analysed: with full sync each carries the whole text, and
/// analysing every keystroke of a large file would leave the queue (and hover, completion)
/// behind the typing. Returns the message to handle and the first queued one that is not
/// such a change, to handle after it.
fn coalesce(
    mut m: Message,
    rx: &crossbeam_channel::Receiver<Message>,
) -> (Message, Option<Message>) {
    while let Some(uri) = changed(&m) {
        match rx.try_recv() {
            Ok(next) if changed(&next).as_ref() == Some(&uri) => m = next,
            Ok(next) => return (m, Some(next)),
            Err(_) => break,
        }
    }
    (m, None)
}

/// The document a `didChange` notification changes.
fn changed(m: &Message) -> Option<Value> {
    match m {
        Message::Notification(not) if not.method == n::DidChangeTextDocument::METHOD => {
            not.params.pointer("/textDocument/uri").cloned()
        }
        _ => None,
    }
}

/// Waits for `initialize` (refusing other requests) and answers it; `None` when the client
/// left or said `exit` first.
fn handshake(conn: &Connection) -> Result<Option<Value>, Error> {
    for m in &conn.receiver {
        match m {
            Message::Request(req) if req.method == r::Initialize::METHOD => {
                let result = json!({
                    "capabilities": capabilities(),
                    "serverInfo": { "name": "weft", "version": env!("CARGO_PKG_VERSION") },
                });
                send(conn, Response::new_ok(req.id, result).into())?;
                return Ok(Some(req.params));
            }
            Message::Request(req) => {
                let e = Response::new_err(
                    req.id,
                    ErrorCode::ServerNotInitialized as i32,
                    "the server is not initialized".into(),
                );
                send(conn, e.into())?;
            }
            Message::Notification(n) if n.method == n::Exit::METHOD => return Ok(None),
            _ => {}
        }
    }
    Ok(None)
}

fn send(conn: &Connection, m: Message) -> Result<(), Error> {
    conn.sender.send(m).map_err(|_| Error::Disconnected)
}

fn params<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| format!("invalid parameters: {e}"))
}

impl Server<'_> {
    fn message(&mut self, m: Message) -> Result<Flow, Error> {
        match m {
            Message::Request(req) => {
                if req.method == r::Shutdown::METHOD {
                    self.shutdown = true;
                    send(self.conn, Response::new_ok(req.id, Value::Null).into())?;
                    return Ok(Flow::Continue);
                }
                let id = req.id.clone();
                let resp = match self.request(req) {
                    Ok(v) => Response::new_ok(id, v),
                    Err((code, msg)) => Response::new_err(id, code as i32, msg),
                };
                send(self.conn, resp.into())?;
            }
            Message::Notification(not) => {
                if not.method == n::Exit::METHOD {
                    return Ok(Flow::Exit);
                }
                self.notification(not)?;
            }
            // Answers to our own requests (progress tokens): nothing to do.
            Message::Response(_) => {}
        }
        Ok(Flow::Continue)
    }

    fn doc(&self, uri: &Url) -> Result<&Document, (ErrorCode, String)> {
        self.docs
            .get(uri)
            .ok_or_else(|| (ErrorCode::InvalidParams, format!("`{uri}` is not open")))
    }

    fn at(
        &self,
        p: &TextDocumentPositionParams,
    ) -> Result<(&Document, usize), (ErrorCode, String)> {
        let doc = self.doc(&p.text_document.uri)?;
        Ok((doc, doc.index.offset(&doc.text, p.position)))
    }

    fn request(&mut self, req: Request) -> Result<Value, (ErrorCode, String)> {
        if self.shutdown {
            return Err((
                ErrorCode::InvalidRequest,
                "the server is shutting down".into(),
            ));
        }
        let bad = |e: String| (ErrorCode::InvalidParams, e);
        let to = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| (ErrorCode::InternalError, e.to_string()))
        };
        match req.method.as_str() {
            r::HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = params(req.params).map_err(bad)?;
                let (doc, offset) = self.at(&p.text_document_position_params)?;
                let h = navigate::target(doc, offset)
                    .and_then(|t| navigate::hover(doc, &self.std, &t, offset))
                    .or_else(|| navigate::hover_code(doc, offset));
                to(serde_json::to_value(h))
            }
            r::GotoDefinition::METHOD => {
                let p: lsp_types::GotoDefinitionParams = params(req.params).map_err(bad)?;
                let (doc, offset) = self.at(&p.text_document_position_params)?;
                let l = navigate::target(doc, offset)
                    .and_then(|t| navigate::definition(doc, &self.std, &t));
                to(serde_json::to_value(l))
            }
            r::References::METHOD => {
                let p: lsp_types::ReferenceParams = params(req.params).map_err(bad)?;
                let (doc, offset) = self.at(&p.text_document_position)?;
                let decl = p.context.include_declaration;
                let l = navigate::target(doc, offset).map(|t| navigate::references(doc, &t, decl));
                to(serde_json::to_value(l))
            }
            r::Rename::METHOD => {
                let p: lsp_types::RenameParams = params(req.params).map_err(bad)?;
                let (doc, offset) = self.at(&p.text_document_position)?;
                let e = navigate::target(doc, offset)
                    .and_then(|t| navigate::rename(doc, &t, &p.new_name))
                    .ok_or_else(|| {
                        (
                            ErrorCode::InvalidParams,
                            "only a node or a template can be renamed, to a plain name".to_owned(),
                        )
                    })?;
                to(serde_json::to_value(e))
            }
            r::Completion::METHOD => {
                let p: lsp_types::CompletionParams = params(req.params).map_err(bad)?;
                let doc = self.doc(&p.text_document_position.text_document.uri)?;
                to(serde_json::to_value(edit::complete(
                    doc,
                    p.text_document_position.position,
                )))
            }
            r::Formatting::METHOD => {
                let p: lsp_types::DocumentFormattingParams = params(req.params).map_err(bad)?;
                to(serde_json::to_value(edit::format(
                    self.doc(&p.text_document.uri)?,
                )))
            }
            r::DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams = params(req.params).map_err(bad)?;
                to(serde_json::to_value(navigate::symbols(
                    self.doc(&p.text_document.uri)?,
                )))
            }
            r::CodeActionRequest::METHOD => {
                let p: lsp_types::CodeActionParams = params(req.params).map_err(bad)?;
                let doc = self.doc(&p.text_document.uri)?;
                to(serde_json::to_value(edit::actions(doc, p.range)))
            }
            "weft/stdlib" => {
                let uri: Url = req
                    .params
                    .get("uri")
                    .cloned()
                    .ok_or_else(|| bad("no `uri`".into()))
                    .and_then(|u| params(u).map_err(bad))?;
                let text = self
                    .std
                    .text_of(&uri)
                    .ok_or_else(|| bad(format!("`{uri}` is no module of the standard library")))?;
                Ok(json!({ "text": text }))
            }
            other => Err((
                ErrorCode::MethodNotFound,
                format!("`{other}` is not supported"),
            )),
        }
    }

    fn notification(&mut self, not: Notification) -> Result<(), Error> {
        match not.method.as_str() {
            n::DidOpenTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidOpenTextDocumentParams>(not.params) {
                    let d = p.text_document;
                    self.update(d.uri, d.version, d.text)?;
                }
            }
            n::DidChangeTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidChangeTextDocumentParams>(not.params) {
                    // Full sync: the last change is the whole text.
                    if let Some(c) = p.content_changes.into_iter().last() {
                        self.update(p.text_document.uri, p.text_document.version, c.text)?;
                    }
                }
            }
            n::DidSaveTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidSaveTextDocumentParams>(not.params) {
                    self.queue_proof(&p.text_document.uri)?;
                }
            }
            n::DidCloseTextDocument::METHOD => {
                if let Ok(p) = params::<lsp_types::DidCloseTextDocumentParams>(not.params) {
                    let uri = p.text_document.uri;
                    self.docs.remove(&uri);
                    if let Ok(mut g) = self.generations.lock() {
                        g.remove(&uri);
                    }
                    self.publish_raw(uri, Vec::new(), None)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A new text for `uri`: analysed, its diagnostics published, any proof of an older
    /// text cancelled (its generation is no longer the latest).
    fn update(&mut self, uri: Url, version: i32, text: String) -> Result<(), Error> {
        self.next_generation += 1;
        let generation = self.next_generation;
        if let Ok(mut g) = self.generations.lock() {
            g.insert(uri.clone(), generation);
        }
        let mut doc = Document::new(uri.clone(), version, text, generation);
        if let Some(old) = self.docs.remove(&uri) {
            doc.inherit(old);
        }
        self.docs.insert(uri.clone(), doc);
        self.publish(&uri)
    }

    fn publish(&self, uri: &Url) -> Result<(), Error> {
        match self.docs.get(uri) {
            Some(d) => {
                let mut all = d.diagnostics();
                if let Some(page) = &self.codes_page {
                    all.iter_mut()
                        .for_each(|d| crate::analysis::link_code(d, page));
                }
                self.publish_raw(uri.clone(), all, Some(d.version))
            }
            None => Ok(()),
        }
    }

    fn publish_raw(
        &self,
        uri: Url,
        diagnostics: Vec<lsp_types::Diagnostic>,
        version: Option<i32>,
    ) -> Result<(), Error> {
        let p = PublishDiagnosticsParams::new(uri, diagnostics, version);
        let not = Notification::new(n::PublishDiagnostics::METHOD.into(), p);
        send(self.conn, not.into())
    }

    fn queue_proof(&mut self, uri: &Url) -> Result<(), Error> {
        let Some(doc) = self.docs.get(uri) else {
            return Ok(());
        };
        if doc.compilation.is_none() {
            return Ok(());
        }
        let token = format!("weft-proof-{}", doc.generation);
        if self.progress {
            let create = Request::new(
                RequestId::from(token.clone()),
                r::WorkDoneProgressCreate::METHOD.into(),
                json!({ "token": token }),
            );
            send(self.conn, create.into())?;
        }
        let job = Job {
            uri: uri.clone(),
            generation: doc.generation,
            text: doc.text.clone(),
            token,
        };
        // The worker only stops when this sender is dropped.
        self.jobs.send(job).map_err(|_| Error::Disconnected)
    }

    fn event(&mut self, e: Event) -> Result<(), Error> {
        match e {
            Event::Progress {
                token,
                phase,
                cancelled,
            } => {
                if !self.progress {
                    return Ok(());
                }
                let value = match phase {
                    Some(p) if self.begun.insert(token.clone()) => {
                        WorkDoneProgress::Begin(WorkDoneProgressBegin {
                            title: "weft: proof".into(),
                            message: Some(p.into()),
                            ..WorkDoneProgressBegin::default()
                        })
                    }
                    Some(p) => WorkDoneProgress::Report(WorkDoneProgressReport {
                        message: Some(p.into()),
                        ..WorkDoneProgressReport::default()
                    }),
                    None => {
                        if !self.begun.remove(&token) {
                            // Never begun (dropped before it started, or nothing to prove).
                            return Ok(());
                        }
                        let m = if cancelled {
                            "cancelled: the file changed"
                        } else {
                            "done"
                        };
                        WorkDoneProgress::End(WorkDoneProgressEnd {
                            message: Some(m.into()),
                        })
                    }
                };
                let p = ProgressParams {
                    token: lsp_types::NumberOrString::String(token),
                    value: ProgressParamsValue::WorkDone(value),
                };
                send(
                    self.conn,
                    Notification::new(n::Progress::METHOD.into(), p).into(),
                )
            }
            Event::Done {
                uri,
                generation,
                diagnostics,
                facts,
            } => {
                let Some(doc) = self.docs.get_mut(&uri) else {
                    return Ok(());
                };
                if doc.generation != generation {
                    return Ok(());
                }
                doc.proof = diagnostics;
                doc.built = facts;
                self.publish(&uri)
            }
        }
    }
}

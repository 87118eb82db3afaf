//! Loading an archive: index and member checks while streaming into a temporary store,
//! deep verification there, then the commit (segments into place, manifest swap).

use super::*;

/// Checks the index's own fields and member list; returns the members by name.
fn check_index(index: &ArchiveIndex, opts: &LoadOptions) -> Result<BTreeMap<String, IndexMember>> {
    if index.format != ARCHIVE_FORMAT {
        return Err(ArchiveError::not_archive(format!(
            "index format is {:?}, expected {ARCHIVE_FORMAT:?}",
            index.format
        )));
    }
    if index.archive_version != ARCHIVE_VERSION || index.storage_format_version != FORMAT_VERSION {
        return Err(ArchiveError::UnsupportedVersion {
            archive_version: index.archive_version,
            format_version: index.storage_format_version,
        });
    }
    if parse_hex::<16>(&index.db_uuid).is_none() {
        return Err(ArchiveError::not_archive(
            "index db_uuid is not 32 hex digits",
        ));
    }
    if index.members.len() > MAX_MEMBERS {
        return Err(ArchiveError::not_archive(format!(
            "index lists {} members, more than {MAX_MEMBERS}",
            index.members.len()
        )));
    }
    let mut by_name = BTreeMap::new();
    for m in &index.members {
        let kind = classify(&m.name)?;
        let limit = match kind {
            MemberName::Index => {
                return Err(ArchiveError::Inconsistent {
                    detail: "the index lists itself".into(),
                });
            }
            MemberName::Manifest => MAX_MANIFEST_BYTES.min(opts.max_member_bytes),
            MemberName::Segment(h) => {
                if m.blake3 != blake3::Hash::from_bytes(h).to_hex().as_str() {
                    return Err(ArchiveError::Inconsistent {
                        detail: format!("segment {} is listed with another hash", m.name),
                    });
                }
                opts.max_member_bytes
            }
        };
        if parse_hex::<32>(&m.blake3).is_none() {
            return Err(ArchiveError::not_archive(format!(
                "member {:?} has no valid blake3",
                m.name
            )));
        }
        if m.size > limit {
            return Err(ArchiveError::Oversized {
                name: m.name.clone(),
                size: m.size,
                limit,
            });
        }
        if by_name.insert(m.name.clone(), m.clone()).is_some() {
            return Err(ArchiveError::DuplicateMember {
                name: m.name.clone(),
            });
        }
    }
    if !by_name.contains_key(names::MANIFEST) {
        return Err(ArchiveError::MissingMember {
            name: names::MANIFEST.into(),
        });
    }
    Ok(by_name)
}

fn entry_kind(t: tar::EntryType) -> Option<&'static str> {
    Some(match t {
        tar::EntryType::Regular | tar::EntryType::Continuous => return None,
        tar::EntryType::Symlink => "symlink",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Directory => "directory",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "fifo",
        _ => "special entry",
    })
}

/// The name of a tar entry as UTF-8 text (long names from GNU/PAX headers included).
fn entry_name<R: Read>(e: &tar::Entry<'_, R>) -> Result<String> {
    let raw = e.path_bytes();
    String::from_utf8(raw.into_owned())
        .map_err(|_| ArchiveError::not_archive("member name is not UTF-8"))
}

/// Removes the temporary load directory unless disarmed.
struct TempDir(Option<PathBuf>);

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_dir_all(p);
        }
    }
}

/// A simulated crash (tests): the temporary directory stays behind, as after a kill.
fn abandon(guard: &mut TempDir) -> ArchiveError {
    guard.0 = None;
    simulated().into()
}

/// Loads the archive at `archive` into the store in `batho_dir` (created if missing).
pub fn load_archive(batho_dir: &Path, archive: &Path, opts: &LoadOptions) -> Result<LoadReport> {
    let f = File::open(archive).map_err(|e| ArchiveError::io(archive, e))?;
    load_from_reader(
        batho_dir,
        io::BufReader::with_capacity(1 << 20, f),
        &archive.display().to_string(),
        opts,
    )
}

/// [`load_archive`] from any reader; `label` names the source in the run and the audit log.
pub fn load_from_reader(
    batho_dir: &Path,
    reader: impl Read,
    label: &str,
    opts: &LoadOptions,
) -> Result<LoadReport> {
    load_with(batho_dir, reader, label, opts, &mut |_| false)
}

/// The newest end time of the completed runs of a history; a run recorded by a load counts
/// with the end time of the run it loaded (its message carries it), so loading a newer
/// CI archive after an older one needs no `--force`.
fn newest_run_ms(runs: &[RunRecord]) -> Option<i64> {
    runs.iter()
        .filter(|r| r.status == RunStatus::Completed)
        .map(|r| loaded_source_end(r).unwrap_or(r.ended_at_ms))
        .max()
}

/// For a run recorded by a load: the end time of the source run.
pub fn loaded_source_end(r: &RunRecord) -> Option<i64> {
    let rest = r.message.strip_prefix(LOAD_MESSAGE_PREFIX)?;
    let (_, tail) = rest.rsplit_once("; source run ended at ")?;
    tail.strip_suffix(" ms")?.parse().ok()
}

/// A tar stream that does not read. The tar crate's messages quote the header bytes they
/// could not parse, which for a file that is not an archive (a `.env` given by mistake)
/// are its contents: only the kind of failure is said, never the bytes.
fn bad_tar(error: io::Error) -> ArchiveError {
    let what = match error.kind() {
        io::ErrorKind::UnexpectedEof => "it ends in the middle of a member",
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => "it cannot be read",
        _ => "a member header is not a valid tar header",
    };
    ArchiveError::not_archive(format!("damaged tar stream: {what}"))
}

pub(crate) fn load_with(
    batho_dir: &Path,
    reader: impl Read,
    label: &str,
    opts: &LoadOptions,
    crash: &mut dyn FnMut(LoadStep) -> bool,
) -> Result<LoadReport> {
    let t0 = Instant::now();
    let started_at_ms = now_ms();
    let mut tar = tar::Archive::new(reader);
    let mut entries = tar.entries().map_err(bad_tar)?;

    // 1. The index, which must come first.
    let mut first = entries
        .next()
        .ok_or_else(|| ArchiveError::not_archive("empty archive"))?
        .map_err(bad_tar)?;
    let name = entry_name(&first)?;
    if let Some(kind) = entry_kind(first.header().entry_type()) {
        return Err(ArchiveError::NotARegularFile {
            name,
            kind: kind.into(),
        });
    }
    if classify(&name)? != MemberName::Index {
        return Err(ArchiveError::not_archive(format!(
            "the first member is {name:?}, not {INDEX_NAME}"
        )));
    }
    if first.size() > MAX_INDEX_BYTES {
        return Err(ArchiveError::Oversized {
            name,
            size: first.size(),
            limit: MAX_INDEX_BYTES,
        });
    }
    let mut index_bytes = Vec::new();
    (&mut first)
        .take(MAX_INDEX_BYTES)
        .read_to_end(&mut index_bytes)
        .map_err(bad_tar)?;
    let index: ArchiveIndex = serde_json::from_slice(&index_bytes).map_err(|e| {
        // Line and column only: serde's message can quote the bytes it read.
        ArchiveError::not_archive(format!(
            "the index is not the JSON of an archive index (at line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    let listed = check_index(&index, opts)?;
    let archive_uuid = parse_hex::<16>(&index.db_uuid).unwrap_or_default();

    // 2. The target store. A directory with no generation at all adopts the archive's
    //    identity; otherwise the target keeps its own.
    fs::create_dir_all(batho_dir).map_err(|e| ArchiveError::io(batho_dir, e))?;
    let dbid_path = batho_dir.join(names::DBID);
    let fresh = !dbid_path.exists()
        && !batho_dir.join(names::MANIFEST).exists()
        && crate::store::list_generations(batho_dir)?.is_empty();
    if fresh {
        let tmp = write_temp(batho_dir, names::DBID, &encode_dbid(archive_uuid))?;
        // As in `Store::create_or_open`: hard_link lets two racing creators agree on one id.
        if fs::hard_link(&tmp, &dbid_path).is_err() && !dbid_path.exists() {
            fs::rename(&tmp, &dbid_path).map_err(|e| ArchiveError::io(&dbid_path, e))?;
        }
        let _ = fs::remove_file(&tmp);
        sync_dir(batho_dir)?;
    }
    let store = Store::create_or_open(batho_dir)?;
    let mut lock = store.lock_writer()?;
    let target_uuid = store.db_uuid();
    let restamp = target_uuid != archive_uuid;
    let current = match store.current_manifest() {
        Ok(m) => m,
        Err(e) if !opts.force => return Err(e.into()),
        Err(_) => None,
    };
    let has_artifact = current.as_ref().is_some_and(|m| !m.layers.is_empty());
    if has_artifact && restamp && !opts.force {
        return Err(ArchiveError::ForeignDatabase {
            path: batho_dir.to_path_buf(),
            existing: hex_uuid(target_uuid),
            archive: index.db_uuid.clone(),
        });
    }

    // No load is in progress (we hold the lock): earlier abandoned ones are garbage.
    if let Ok(rd) = fs::read_dir(batho_dir) {
        for ent in rd.flatten() {
            if ent
                .file_name()
                .to_string_lossy()
                .starts_with(LOAD_TMP_PREFIX)
            {
                let _ = fs::remove_dir_all(ent.path());
            }
        }
    }
    let tmp_dir = batho_dir.join(format!(
        "{LOAD_TMP_PREFIX}{}",
        uuid::Uuid::new_v4().simple()
    ));
    let mut guard = TempDir(Some(tmp_dir.clone()));
    let tmp_segs = tmp_dir.join(names::SEGMENTS_DIR);
    for d in [&tmp_segs, &tmp_dir.join(names::MANIFESTS_DIR)] {
        fs::create_dir_all(d).map_err(|e| ArchiveError::io(d, e))?;
    }

    // 3. Every member, streamed into the temporary store and hashed on the way.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut staged: BTreeMap<[u8; 32], PathBuf> = BTreeMap::new();
    let mut total_bytes = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    for entry in entries {
        let mut entry = entry.map_err(bad_tar)?;
        let name = entry_name(&entry)?;
        if let Some(kind) = entry_kind(entry.header().entry_type()) {
            return Err(ArchiveError::NotARegularFile {
                name,
                kind: kind.into(),
            });
        }
        let kind = classify(&name)?;
        if kind == MemberName::Index || seen.contains(&name) {
            return Err(ArchiveError::DuplicateMember { name });
        }
        let Some(want) = listed.get(&name) else {
            return Err(ArchiveError::UnexpectedMember { name });
        };
        if entry.size() != want.size {
            return Err(ArchiveError::SizeMismatch {
                name,
                expected: want.size,
                found: entry.size(),
            });
        }
        let mut hasher = blake3::Hasher::new();
        let mut got = 0u64;
        let part = match kind {
            MemberName::Segment(_) => {
                Some(tmp_segs.join(format!("{}.part", &name["segments/".len()..])))
            }
            _ => None,
        };
        let mut sink = match &part {
            Some(p) => Some(io::BufWriter::with_capacity(
                1 << 20,
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(p)
                    .map_err(|e| ArchiveError::io(p, e))?,
            )),
            None => None,
        };
        let mut mbuf = Vec::new();
        loop {
            let n = entry.read(&mut buf).map_err(bad_tar)?;
            if n == 0 {
                break;
            }
            got += n as u64;
            if got > want.size {
                break;
            }
            hasher.update(&buf[..n]);
            match &mut sink {
                Some(w) => w
                    .write_all(&buf[..n])
                    .map_err(|e| ArchiveError::io(&tmp_segs, e))?,
                None => mbuf.extend_from_slice(&buf[..n]),
            }
        }
        if let Some(w) = sink {
            w.into_inner()
                .map_err(|e| ArchiveError::io(&tmp_segs, e.into_error()))?;
        }
        if got != want.size {
            return Err(ArchiveError::SizeMismatch {
                name,
                expected: want.size,
                found: got,
            });
        }
        let found = hasher.finalize().to_hex().to_string();
        if found != want.blake3 {
            return Err(ArchiveError::HashMismatch {
                name,
                expected: want.blake3.clone(),
                found,
            });
        }
        total_bytes += got;
        match kind {
            MemberName::Manifest => manifest_bytes = Some(mbuf),
            MemberName::Segment(h) => {
                staged.insert(h, part.unwrap_or_default());
            }
            MemberName::Index => {}
        }
        seen.insert(name);
    }
    if let Some(missing) = listed.keys().find(|n| !seen.contains(*n)) {
        return Err(ArchiveError::MissingMember {
            name: missing.clone(),
        });
    }
    let mbytes = manifest_bytes.ok_or_else(|| ArchiveError::MissingMember {
        name: names::MANIFEST.into(),
    })?;
    let body = manifest::decode(&mbytes, Path::new("<archive>/MANIFEST"))?;
    if body.db_uuid != archive_uuid || body.generation != index.generation {
        return Err(ArchiveError::Inconsistent {
            detail: "the manifest's identity or generation differs from the index".into(),
        });
    }
    let named: BTreeSet<[u8; 32]> = body
        .layers
        .iter()
        .flat_map(|l| l.segments.iter().map(|s| s.hash))
        .collect();
    if body.layers.is_empty() {
        return Err(ArchiveError::Inconsistent {
            detail: "the manifest holds no graph".into(),
        });
    }
    if named != staged.keys().copied().collect() {
        return Err(ArchiveError::Inconsistent {
            detail: "the segments in the archive differ from those its manifest names".into(),
        });
    }
    for s in body.layers.iter().flat_map(|l| &l.segments) {
        if listed
            .get(&segment_member_name(s))
            .is_none_or(|m| m.size != s.len)
        {
            return Err(ArchiveError::Inconsistent {
                detail: format!(
                    "segment {} has another length in the manifest",
                    s.file_name()
                ),
            });
        }
    }

    // 4. Refusals that need the archive's history.
    if let Some(cur) = current.as_ref().filter(|_| has_artifact && !opts.force)
        && let (Some(existing_ms), Some(archive_ms)) =
            (newest_run_ms(&cur.runs), newest_run_ms(&body.runs))
        && existing_ms > archive_ms
    {
        return Err(ArchiveError::NewerRuns {
            path: batho_dir.to_path_buf(),
            existing_ms,
            archive_ms,
        });
    }

    // 5. Name the segments in the temporary store; restamp them with the target's identity
    //    when it differs (a new header, hence new content and name).
    let mut renamed: BTreeMap<[u8; 32], SegmentRef> = BTreeMap::new();
    for s in body.layers.iter().flat_map(|l| &l.segments) {
        if renamed.contains_key(&s.hash) {
            continue;
        }
        let part = &staged[&s.hash];
        let mut r = s.clone();
        if restamp {
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(part)
                .map_err(|e| ArchiveError::io(part, e))?;
            let mut hdr = [0u8; SEGMENT_HEADER_LEN];
            f.read_exact(&mut hdr)
                .map_err(|e| ArchiveError::io(part, e))?;
            let h = SegmentHeader::decode(&hdr, part)?;
            if h.db_uuid != archive_uuid {
                return Err(ArchiveError::Inconsistent {
                    detail: format!("segment {} belongs to another database", s.file_name()),
                });
            }
            let new = SegmentHeader {
                db_uuid: target_uuid,
                ..h
            };
            f.seek(SeekFrom::Start(0))
                .and_then(|_| f.write_all(&new.encode()))
                .map_err(|e| ArchiveError::io(part, e))?;
            drop(f);
            r.hash = *hash_file(part)?.as_bytes();
        }
        let dst = tmp_segs.join(r.file_name());
        File::open(part)
            .and_then(|f| f.sync_all())
            .map_err(|e| ArchiveError::io(part, e))?;
        fs::rename(part, &dst).map_err(|e| ArchiveError::io(&dst, e))?;
        renamed.insert(s.hash, r);
    }
    let layers_at = |generation: u64| -> Vec<Layer> {
        body.layers
            .iter()
            .map(|l| Layer {
                created_generation: generation,
                segments: l
                    .segments
                    .iter()
                    .map(|s| renamed[&s.hash].clone())
                    .collect(),
                ..l.clone()
            })
            .collect()
    };
    let tmp_body = ManifestBody {
        generation: body.generation,
        db_uuid: target_uuid,
        created_at_ms: body.created_at_ms,
        layers: layers_at(body.generation),
        runs: body.runs.clone(),
    };
    let tmp_bytes = manifest::encode(&tmp_body)?;
    fs::write(tmp_dir.join(names::DBID), encode_dbid(target_uuid))
        .map_err(|e| ArchiveError::io(&tmp_dir, e))?;
    fs::write(
        generation_manifest_path(&tmp_dir, body.generation),
        &tmp_bytes,
    )
    .map_err(|e| ArchiveError::io(&tmp_dir, e))?;
    fs::write(tmp_dir.join(names::MANIFEST), &tmp_bytes)
        .map_err(|e| ArchiveError::io(&tmp_dir, e))?;
    if crash(LoadStep::Unpacked) {
        return Err(abandon(&mut guard));
    }

    // 6. Deep verification of the unpacked artifact, before anything becomes current.
    let art = Artifact::open_current(&tmp_dir, crate::reader::ContentCheck::Skip)?;
    let issues = art.verify(true);
    drop(art);
    if !issues.is_empty() {
        return Err(ArchiveError::VerificationFailed {
            issues: issues
                .iter()
                .map(|i| format!("{}: {}", i.what, i.detail))
                .collect(),
        });
    }
    if crash(LoadStep::Verified) {
        return Err(abandon(&mut guard));
    }

    // 7. Commit: segments into place (unreachable until the manifest names them), then the
    //    ordinary manifest swap.
    let seg_dir = batho_dir.join(names::SEGMENTS_DIR);
    let mut segments_written = 0;
    for r in renamed.values() {
        let src = tmp_segs.join(r.file_name());
        let dst = seg_dir.join(r.file_name());
        // Content addressing: an existing file that holds these bytes is kept (the rule of
        // a commit); a damaged one is replaced by the archive's verified copy.
        if crate::store::holds_segment(&dst, r) {
            continue;
        }
        fs::rename(&src, &dst).map_err(|e| ArchiveError::io(&dst, e))?;
        segments_written += 1;
        if crash(LoadStep::SegmentMoved) {
            return Err(abandon(&mut guard));
        }
    }
    sync_dir(&seg_dir)?;
    if crash(LoadStep::SegmentsSynced) {
        return Err(abandon(&mut guard));
    }
    let source = body
        .runs
        .iter()
        .rev()
        .find(|r| r.status == RunStatus::Completed);
    let top = body.layers.last().cloned().unwrap_or_else(|| Layer {
        kind: 0,
        created_generation: 0,
        node_count: 0,
        edge_count: 0,
        segments: Vec::new(),
    });
    let source_end = source.map(|r| loaded_source_end(r).unwrap_or(r.ended_at_ms));
    let run_uuid = uuid::Uuid::new_v4().to_string();
    let run = RunRecord {
        uuid: run_uuid.clone(),
        kind: RunKind::Build,
        started_at_ms,
        ended_at_ms: now_ms(),
        status: RunStatus::Completed,
        git_commit: source.and_then(|r| r.git_commit.clone()),
        git_branch: source.and_then(|r| r.git_branch.clone()),
        node_count: top.node_count,
        edge_count: top.edge_count,
        file_count: source.map_or(0, |r| r.file_count),
        skipped_files: source.map_or(0, |r| r.skipped_files),
        duration_ms: t0.elapsed().as_millis() as u64,
        generation: 0,
        message: format!(
            "{LOAD_MESSAGE_PREFIX}{label} (archive generation {}, source run {}); source run ended at {} ms",
            body.generation,
            source.map_or("none", |r| r.uuid.as_str()),
            source_end.unwrap_or(0)
        ),
    };
    let previous_generation = current.as_ref().map(|m| m.generation);
    let runs = current.map(|m| m.runs).unwrap_or_default();
    let mut crashed = false;
    let published = lock.publish_layers_with(layers_at, runs, Some(run), &mut |s| {
        crashed = crash(LoadStep::Publish(s));
        crashed
    });
    if crashed {
        return Err(abandon(&mut guard));
    }
    let generation = published?;
    let audit = AuditLog::new(batho_dir).append(
        "load",
        &format!(
            "loaded {label} (archive generation {}, database {}{}) as generation {generation}",
            body.generation,
            index.db_uuid,
            if restamp {
                format!(", restamped as {}", hex_uuid(target_uuid))
            } else {
                String::new()
            }
        ),
    )?;
    if crash(LoadStep::Audited) {
        return Err(abandon(&mut guard));
    }
    drop(guard);
    drop(lock);
    Ok(LoadReport {
        dir: batho_dir.to_path_buf(),
        generation,
        previous_generation,
        archive_generation: body.generation,
        db_uuid: hex_uuid(target_uuid),
        restamped: restamp,
        node_count: top.node_count,
        edge_count: top.edge_count,
        bytes: total_bytes,
        members: seen.len(),
        segments_written,
        verified: true,
        run_uuid,
        audit,
        elapsed_ms: t0.elapsed().as_millis() as u64,
    })
}

/// Reads the index of an archive without loading it (for `batho load --dry-run`-like
/// inspection and tests).
pub fn read_index(archive: &Path) -> Result<ArchiveIndex> {
    let f = File::open(archive).map_err(|e| ArchiveError::io(archive, e))?;
    let mut tar = tar::Archive::new(io::BufReader::new(f));
    let mut entries = tar
        .entries()
        .map_err(|e| ArchiveError::not_archive(e.to_string()))?;
    let mut first = entries
        .next()
        .ok_or_else(|| ArchiveError::not_archive("empty archive"))?
        .map_err(|e| ArchiveError::not_archive(e.to_string()))?;
    if entry_name(&first)? != INDEX_NAME {
        return Err(ArchiveError::not_archive(
            "the first member is not the index",
        ));
    }
    let mut b = Vec::new();
    (&mut first)
        .take(MAX_INDEX_BYTES)
        .read_to_end(&mut b)
        .map_err(|e| ArchiveError::io(archive, e))?;
    serde_json::from_slice(&b).map_err(|e| ArchiveError::not_archive(e.to_string()))
}

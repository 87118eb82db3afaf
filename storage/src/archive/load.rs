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

/// Loads an archive from `reader` into the store in `batho_dir`, calling `crash` at each
/// step a crash test can stop at. The steps: read and check the index (the first member),
/// open the target under the writer lock and refuse a foreign one, stream every member
/// into a temporary store, check the manifest against the index, refuse an archive older
/// than the target, name (and restamp) the segments, verify the unpacked artifact deep,
/// then commit: segments into place, the manifest swap, the audit entry.
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
    let (index, listed) = read_first_member_index(&mut entries, opts)?;
    let archive_uuid = parse_hex::<16>(&index.db_uuid).unwrap_or_default();
    adopt_identity_if_fresh(batho_dir, archive_uuid)?;
    let store = Store::create_or_open(batho_dir)?;
    let mut lock = store.lock_writer()?;
    let target = Target::of(&store, batho_dir, archive_uuid, &index, opts)?;
    clear_abandoned_loads(batho_dir);
    let (mut guard, tmp_dir) = temporary_store(batho_dir)?;
    let tmp_segs = tmp_dir.join(names::SEGMENTS_DIR);
    let streamed = stream_members(entries, &listed, &tmp_segs)?;
    let body = checked_manifest(&streamed, &index, &listed, archive_uuid)?;
    refuse_an_older_archive(batho_dir, &target, &body, opts)?;
    let renamed = name_segments(&body, &streamed.staged, &tmp_segs, &target, archive_uuid)?;
    write_temporary_manifest(&tmp_dir, &body, &renamed, target.uuid)?;
    if crash(LoadStep::Unpacked) {
        return Err(abandon(&mut guard));
    }
    verify_unpacked(&tmp_dir)?;
    if crash(LoadStep::Verified) {
        return Err(abandon(&mut guard));
    }
    let segments_written = move_segments_into_place(batho_dir, &tmp_segs, &renamed, crash)
        .map_err(|stopped| stopped.unwrap_or_else(|| abandon(&mut guard)))?;
    let top = top_layer(&body);
    let run = load_run(&body, &top, label, started_at_ms, t0);
    let run_uuid = run.uuid.clone();
    let previous_generation = target.current.as_ref().map(|m| m.generation);
    let runs = target
        .current
        .as_ref()
        .map(|m| m.runs.clone())
        .unwrap_or_default();
    let mut crashed = false;
    let published = lock.publish_layers_with(
        |generation| layers_at(&body, &renamed, generation),
        runs,
        Some(run),
        &mut |step| {
            crashed = crash(LoadStep::Publish(step));
            crashed
        },
    );
    if crashed {
        return Err(abandon(&mut guard));
    }
    let generation = published?;
    let audit = audit_load(batho_dir, label, &body, &index, &target, generation)?;
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
        db_uuid: hex_uuid(target.uuid),
        restamped: target.restamp,
        node_count: top.node_count,
        edge_count: top.edge_count,
        bytes: streamed.total_bytes,
        members: streamed.members,
        segments_written,
        verified: true,
        run_uuid,
        audit,
        elapsed_ms: t0.elapsed().as_millis() as u64,
    })
}

/// Step 1: the index, which must come first, read and checked; the members it lists by
/// name.
fn read_first_member_index<R: Read>(
    entries: &mut tar::Entries<'_, R>,
    opts: &LoadOptions,
) -> Result<(ArchiveIndex, BTreeMap<String, IndexMember>)> {
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
    Ok((index, listed))
}

/// Step 2a: a directory with no generation at all adopts the archive's identity;
/// otherwise the target keeps its own.
fn adopt_identity_if_fresh(batho_dir: &Path, archive_uuid: [u8; 16]) -> Result<()> {
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
    Ok(())
}

/// The store a load goes into, as it was before.
struct Target {
    /// Its identity.
    uuid: [u8; 16],
    /// Whether the segments are restamped with it (the archive's differs).
    restamp: bool,
    /// Its current manifest (`None` without one, or with `force` over a broken one).
    current: Option<ManifestBody>,
    /// Whether it holds a graph.
    has_artifact: bool,
}

impl Target {
    /// Step 2b: the target under the writer lock; an artifact of another database is
    /// replaced only with `force`.
    fn of(
        store: &Store,
        batho_dir: &Path,
        archive_uuid: [u8; 16],
        index: &ArchiveIndex,
        opts: &LoadOptions,
    ) -> Result<Target> {
        let uuid = store.db_uuid();
        let restamp = uuid != archive_uuid;
        let current = match store.current_manifest() {
            Ok(m) => m,
            Err(e) if !opts.force => return Err(e.into()),
            Err(_) => None,
        };
        let has_artifact = current.as_ref().is_some_and(|m| !m.layers.is_empty());
        if has_artifact && restamp && !opts.force {
            return Err(ArchiveError::ForeignDatabase {
                path: batho_dir.to_path_buf(),
                existing: hex_uuid(uuid),
                archive: index.db_uuid.clone(),
            });
        }
        Ok(Target {
            uuid,
            restamp,
            current,
            has_artifact,
        })
    }
}

/// No load is in progress (the caller holds the lock): earlier abandoned ones are garbage.
fn clear_abandoned_loads(batho_dir: &Path) {
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
}

/// The temporary store a load unpacks into (removed when the guard drops), and its path.
fn temporary_store(batho_dir: &Path) -> Result<(TempDir, PathBuf)> {
    let tmp_dir = batho_dir.join(format!(
        "{LOAD_TMP_PREFIX}{}",
        uuid::Uuid::new_v4().simple()
    ));
    let guard = TempDir(Some(tmp_dir.clone()));
    for d in [
        &tmp_dir.join(names::SEGMENTS_DIR),
        &tmp_dir.join(names::MANIFESTS_DIR),
    ] {
        fs::create_dir_all(d).map_err(|e| ArchiveError::io(d, e))?;
    }
    Ok((guard, tmp_dir))
}

/// What streaming the members gave.
struct Streamed {
    manifest_bytes: Option<Vec<u8>>,
    /// Each segment's file in the temporary store, by the hash the archive names it with.
    staged: BTreeMap<[u8; 32], PathBuf>,
    total_bytes: u64,
    members: usize,
}

/// Step 3: every member, streamed into the temporary store and hashed on the way; each
/// one listed by the index, once, with the listed size and hash.
fn stream_members<R: Read>(
    entries: tar::Entries<'_, R>,
    listed: &BTreeMap<String, IndexMember>,
    tmp_segs: &Path,
) -> Result<Streamed> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut streamed = Streamed {
        manifest_bytes: None,
        staged: BTreeMap::new(),
        total_bytes: 0,
        members: 0,
    };
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
        let part = match kind {
            MemberName::Segment(_) => {
                Some(tmp_segs.join(format!("{}.part", &name["segments/".len()..])))
            }
            _ => None,
        };
        let bytes = stream_member(&mut entry, &name, want, part.as_deref(), tmp_segs, &mut buf)?;
        streamed.total_bytes += want.size;
        match kind {
            MemberName::Manifest => streamed.manifest_bytes = Some(bytes),
            MemberName::Segment(h) => {
                streamed.staged.insert(h, part.unwrap_or_default());
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
    streamed.members = seen.len();
    Ok(streamed)
}

/// One member: written to `part` (a segment) or kept in memory (the manifest, returned),
/// checked against the size and the blake3 the index lists.
fn stream_member(
    entry: &mut impl Read,
    name: &str,
    want: &IndexMember,
    part: Option<&Path>,
    tmp_segs: &Path,
    buf: &mut [u8],
) -> Result<Vec<u8>> {
    let mut hasher = blake3::Hasher::new();
    let mut got = 0u64;
    let mut sink = match part {
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
    let mut kept = Vec::new();
    loop {
        let n = entry.read(buf).map_err(bad_tar)?;
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
                .map_err(|e| ArchiveError::io(tmp_segs, e))?,
            None => kept.extend_from_slice(&buf[..n]),
        }
    }
    if let Some(w) = sink {
        w.into_inner()
            .map_err(|e| ArchiveError::io(tmp_segs, e.into_error()))?;
    }
    if got != want.size {
        return Err(ArchiveError::SizeMismatch {
            name: name.to_string(),
            expected: want.size,
            found: got,
        });
    }
    let found = hasher.finalize().to_hex().to_string();
    if found != want.blake3 {
        return Err(ArchiveError::HashMismatch {
            name: name.to_string(),
            expected: want.blake3.clone(),
            found,
        });
    }
    Ok(kept)
}

/// Step 3b: the archive's manifest, consistent with its index: the same identity and
/// generation, a graph, exactly the segments streamed, each with its listed length.
fn checked_manifest(
    streamed: &Streamed,
    index: &ArchiveIndex,
    listed: &BTreeMap<String, IndexMember>,
    archive_uuid: [u8; 16],
) -> Result<ManifestBody> {
    let bytes = streamed
        .manifest_bytes
        .as_ref()
        .ok_or_else(|| ArchiveError::MissingMember {
            name: names::MANIFEST.into(),
        })?;
    let body = manifest::decode(bytes, Path::new("<archive>/MANIFEST"))?;
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
    if named != streamed.staged.keys().copied().collect() {
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
    Ok(body)
}

/// Step 4: an archive whose newest run is older than the target's is refused without
/// `force`.
fn refuse_an_older_archive(
    batho_dir: &Path,
    target: &Target,
    body: &ManifestBody,
    opts: &LoadOptions,
) -> Result<()> {
    if let Some(cur) = target
        .current
        .as_ref()
        .filter(|_| target.has_artifact && !opts.force)
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
    Ok(())
}

/// Step 5: the segments named in the temporary store, restamped with the target's
/// identity when it differs (a new header, hence new content and name); each segment's
/// reference by the hash the archive named it with.
fn name_segments(
    body: &ManifestBody,
    staged: &BTreeMap<[u8; 32], PathBuf>,
    tmp_segs: &Path,
    target: &Target,
    archive_uuid: [u8; 16],
) -> Result<BTreeMap<[u8; 32], SegmentRef>> {
    let mut renamed: BTreeMap<[u8; 32], SegmentRef> = BTreeMap::new();
    for s in body.layers.iter().flat_map(|l| &l.segments) {
        if renamed.contains_key(&s.hash) {
            continue;
        }
        let part = &staged[&s.hash];
        let mut r = s.clone();
        if target.restamp {
            restamp_segment(part, s, archive_uuid, target.uuid)?;
            r.hash = *hash_file(part)?.as_bytes();
        }
        let dst = tmp_segs.join(r.file_name());
        File::open(part)
            .and_then(|f| f.sync_all())
            .map_err(|e| ArchiveError::io(part, e))?;
        fs::rename(part, &dst).map_err(|e| ArchiveError::io(&dst, e))?;
        renamed.insert(s.hash, r);
    }
    Ok(renamed)
}

/// Rewrites the header of the segment at `part` with the target's identity.
fn restamp_segment(
    part: &Path,
    s: &SegmentRef,
    archive_uuid: [u8; 16],
    target_uuid: [u8; 16],
) -> Result<()> {
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
        .map_err(|e| ArchiveError::io(part, e))
}

/// The archive's layers as committed at `generation`, naming the segments as renamed.
fn layers_at(
    body: &ManifestBody,
    renamed: &BTreeMap<[u8; 32], SegmentRef>,
    generation: u64,
) -> Vec<Layer> {
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
}

/// Step 5b: the temporary store's DBID, manifest and manifest copy, so that it opens as
/// an artifact of its own.
fn write_temporary_manifest(
    tmp_dir: &Path,
    body: &ManifestBody,
    renamed: &BTreeMap<[u8; 32], SegmentRef>,
    target_uuid: [u8; 16],
) -> Result<()> {
    let tmp_body = ManifestBody {
        generation: body.generation,
        db_uuid: target_uuid,
        created_at_ms: body.created_at_ms,
        layers: layers_at(body, renamed, body.generation),
        runs: body.runs.clone(),
    };
    let tmp_bytes = manifest::encode(&tmp_body)?;
    fs::write(tmp_dir.join(names::DBID), encode_dbid(target_uuid))
        .map_err(|e| ArchiveError::io(tmp_dir, e))?;
    fs::write(
        generation_manifest_path(tmp_dir, body.generation),
        &tmp_bytes,
    )
    .map_err(|e| ArchiveError::io(tmp_dir, e))?;
    fs::write(tmp_dir.join(names::MANIFEST), &tmp_bytes).map_err(|e| ArchiveError::io(tmp_dir, e))
}

/// Step 6: deep verification of the unpacked artifact, before anything becomes current.
fn verify_unpacked(tmp_dir: &Path) -> Result<()> {
    let art = Artifact::open_current(tmp_dir, crate::reader::ContentCheck::Skip)?;
    let issues = art.verify(true);
    drop(art);
    if issues.is_empty() {
        return Ok(());
    }
    Err(ArchiveError::VerificationFailed {
        issues: issues
            .iter()
            .map(|i| format!("{}: {}", i.what, i.detail))
            .collect(),
    })
}

/// Step 7a: the segments moved into place (unreachable until the manifest names them);
/// how many were written. `Err(None)`: a simulated crash stopped it.
fn move_segments_into_place(
    batho_dir: &Path,
    tmp_segs: &Path,
    renamed: &BTreeMap<[u8; 32], SegmentRef>,
    crash: &mut dyn FnMut(LoadStep) -> bool,
) -> std::result::Result<usize, Option<ArchiveError>> {
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
        fs::rename(&src, &dst).map_err(|e| Some(ArchiveError::io(&dst, e)))?;
        segments_written += 1;
        if crash(LoadStep::SegmentMoved) {
            return Err(None);
        }
    }
    sync_dir(&seg_dir).map_err(|e| Some(e.into()))?;
    if crash(LoadStep::SegmentsSynced) {
        return Err(None);
    }
    Ok(segments_written)
}

/// The archive's top layer (its counts are the graph's).
fn top_layer(body: &ManifestBody) -> Layer {
    body.layers.last().cloned().unwrap_or_else(|| Layer {
        kind: 0,
        created_generation: 0,
        node_count: 0,
        edge_count: 0,
        segments: Vec::new(),
    })
}

/// The run a load records: a build of the archive's graph, carrying its source run's
/// commit, branch and counts, and in its message the source run's end (see
/// [`loaded_source_end`]).
fn load_run(
    body: &ManifestBody,
    top: &Layer,
    label: &str,
    started_at_ms: i64,
    t0: Instant,
) -> RunRecord {
    let source = body
        .runs
        .iter()
        .rev()
        .find(|r| r.status == RunStatus::Completed);
    let source_end = source.map(|r| loaded_source_end(r).unwrap_or(r.ended_at_ms));
    RunRecord {
        uuid: uuid::Uuid::new_v4().to_string(),
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
    }
}

/// Step 7c: the load's audit entry, appended under the writer lock.
fn audit_load(
    batho_dir: &Path,
    label: &str,
    body: &ManifestBody,
    index: &ArchiveIndex,
    target: &Target,
    generation: u64,
) -> Result<AuditEntry> {
    Ok(AuditLog::new(batho_dir).append(
        "load",
        &format!(
            "loaded {label} (archive generation {}, database {}{}) as generation {generation}",
            body.generation,
            index.db_uuid,
            if target.restamp {
                format!(", restamped as {}", hex_uuid(target.uuid))
            } else {
                String::new()
            }
        ),
    )?)
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

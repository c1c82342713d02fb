-- truss_lab DuckDB schema. Ordered migrations: each block starting with
-- "-- migration: NNN_name" runs once, in its own transaction, and is recorded
-- in schema_version.
--
-- Migrations are history: a later block may rename or drop what an earlier one
-- created (004 renames columns and drops the unused scores table), so read the
-- whole file, or `truss-lab schema`, for the current shape.
--
-- Names: the extractor configuration is `extractor_id` in every table (the
-- interchange files of Formats §2/§3 call it `extractor`; their readers map
-- it); counts are `n_<things>`; the gate's threshold is `extraction_min_salience`,
-- as in the config. Two kinds of journal reference, on purpose:
--   verdict_seq / verdict_hash          the verdict a row is ABOUT (candidates,
--                                       verdict_errors, run_verdicts): always a
--                                       contract_verdict entry.
--   produced_by_seq / produced_by_hash  the governed provenance of a record
--                                       (memory_entries, policy_records, events):
--                                       the journal entry that justified the write,
--                                       which may be any kind (a verdict for a
--                                       lesson, a sweep result for a policy).
--
-- Uniqueness: the journal, signing_keys, extraction_runs and policy_records are
-- small and carry PRIMARY KEYs (the key enforces the invariant). The bulk
-- tables (candidates, memory_entries, events, completions, labels,
-- verdict_errors) are unkeyed: DuckDB appends to a keyed table 2-3x slower,
-- so they are written by anti-join inserts (WHERE NOT EXISTS) with ids derived
-- from content. That relies on the single writer, which DuckDB's file lock
-- guarantees.

-- migration: 001_initial
CREATE TABLE schema_version (
    version     INTEGER PRIMARY KEY,
    name        VARCHAR NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL
);

-- The signed, append-only journal (Formats §1). payload is the RFC 8785
-- canonical text, so hashes are recomputed without re-canonicalizing.
CREATE TABLE journal (
    seq         BIGINT PRIMARY KEY,
    kind        VARCHAR NOT NULL,
    ts          VARCHAR NOT NULL,      -- RFC 3339 text exactly as signed
    key_id      VARCHAR NOT NULL,
    payload     JSON NOT NULL,
    prev_hash   VARCHAR NOT NULL,
    hash        VARCHAR NOT NULL UNIQUE,
    signature   VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL   -- when this database received it
);

-- Public keys only. Private keys never enter the database.
CREATE TABLE signing_keys (
    key_id      VARCHAR PRIMARY KEY,
    public_key  VARCHAR NOT NULL,      -- standard base64 of the raw 32 bytes
    added_at    TIMESTAMPTZ NOT NULL
);

-- Governed memory (ADR 0011). SI-1 lessons: kind='lesson', trust='unverified'.
CREATE TABLE memory_entries (
    entry_id          VARCHAR NOT NULL,
    kind              VARCHAR NOT NULL,
    trust             VARCHAR NOT NULL,
    text              VARCHAR NOT NULL,
    salience          DOUBLE,
    evidence          VARCHAR[],
    lesson_index      INTEGER,
    produced_by_seq   BIGINT NOT NULL,
    produced_by_hash  VARCHAR NOT NULL,
    sources           STRUCT(seq BIGINT, hash VARCHAR)[] NOT NULL,
    extractor_id      VARCHAR,
    run_id            VARCHAR,
    prompt_version    VARCHAR,
    created_at        TIMESTAMPTZ NOT NULL,
    superseded_by     VARCHAR
);

-- Typed, versioned policy records with the same governance shape as memory.
CREATE TABLE policy_records (
    record_id         VARCHAR PRIMARY KEY,
    policy_id         VARCHAR NOT NULL,
    target            VARCHAR NOT NULL,
    version           INTEGER NOT NULL,
    settings          JSON NOT NULL,
    trust             VARCHAR NOT NULL,
    produced_by_seq   BIGINT NOT NULL,
    produced_by_hash  VARCHAR NOT NULL,
    sources           STRUCT(seq BIGINT, hash VARCHAR)[] NOT NULL,
    extractor_id      VARCHAR,
    run_id            VARCHAR,
    created_at        TIMESTAMPTZ NOT NULL,
    supersedes        VARCHAR,
    superseded_by     VARCHAR
);

-- AgentEvent stream: one memory_write per memory entry, one policy_write per record.
CREATE TABLE events (
    event_id          VARCHAR NOT NULL,
    type              VARCHAR NOT NULL,
    subject_id        VARCHAR NOT NULL,  -- entry_id or record_id
    kind              VARCHAR,
    trust             VARCHAR,
    produced_by_seq   BIGINT NOT NULL,
    produced_by_hash  VARCHAR NOT NULL,
    run_id            VARCHAR,
    ts                TIMESTAMPTZ NOT NULL
);

CREATE TABLE extraction_runs (
    run_id            VARCHAR PRIMARY KEY,
    extractor_id      VARCHAR NOT NULL,
    provider          VARCHAR,
    policy            VARCHAR NOT NULL,
    min_salience      DOUBLE NOT NULL,
    scorer            VARCHAR,
    write_memory      BOOLEAN NOT NULL,
    config            JSON NOT NULL,
    prompt_version    VARCHAR,
    prompt_hash       VARCHAR,
    dataset_hash      VARCHAR,
    code_version      VARCHAR,
    started_at        TIMESTAMPTZ NOT NULL,
    finished_at       TIMESTAMPTZ,
    status            VARCHAR NOT NULL,  -- running | finished | failed
    n_verdicts        BIGINT,
    n_candidates      BIGINT,
    n_lessons         BIGINT,
    n_errors          BIGINT,
    provider_calls    BIGINT
);

-- Every candidate lesson of a run, kept whether it passed the gate or not.
CREATE TABLE candidates (
    candidate_id      VARCHAR NOT NULL,  -- from (verdict_hash, extractor_id, lesson_index)
    run_id            VARCHAR NOT NULL,
    verdict_seq       BIGINT NOT NULL,
    verdict_hash      VARCHAR NOT NULL,
    extractor_id      VARCHAR NOT NULL,
    lesson_index      INTEGER NOT NULL,
    text              VARCHAR,
    salience          DOUBLE,            -- the model's own salience (NULL when invalid)
    evidence          VARCHAR[],
    valid             BOOLEAN NOT NULL,
    drop_reason       VARCHAR,
    score             DOUBLE,            -- the score the gate used
    scorer            VARCHAR,           -- name@version of that score
    passed_gate       BOOLEAN NOT NULL,
    entry_id          VARCHAR            -- the memory entry written, if any
);

-- Extra salience scores, one row per (run, candidate, scorer).
CREATE TABLE scores (
    run_id            VARCHAR NOT NULL,
    candidate_id      VARCHAR NOT NULL,
    scorer            VARCHAR NOT NULL,  -- name@version
    score             DOUBLE
);

-- Per-verdict problems of a run (provider error, parse error, ...); the batch goes on.
CREATE TABLE verdict_errors (
    run_id            VARCHAR NOT NULL,
    verdict_seq       BIGINT NOT NULL,
    verdict_hash      VARCHAR NOT NULL,
    stage             VARCHAR NOT NULL,  -- provider | parse
    reason            VARCHAR NOT NULL,
    message           VARCHAR
);

-- Recorded provider calls (Formats §2); never an Authorization header.
CREATE TABLE completions (
    verdict_hash      VARCHAR NOT NULL,
    extractor         VARCHAR NOT NULL,
    model             VARCHAR,
    prompt_version    VARCHAR,
    request_hash      VARCHAR,
    text              VARCHAR NOT NULL,
    latency_ms        DOUBLE,
    prompt_tokens     BIGINT,
    completion_tokens BIGINT,
    source            VARCHAR NOT NULL,  -- the file it came from, or 'live:<provider>'
    recorded_at       TIMESTAMPTZ NOT NULL
);

-- Gold labels (Formats §3).
CREATE TABLE labels (
    verdict_hash      VARCHAR NOT NULL,
    extractor         VARCHAR NOT NULL,
    lesson_index      INTEGER NOT NULL,
    useful            TINYINT NOT NULL,
    annotator         VARCHAR NOT NULL,  -- '' when the file gave none
    source            VARCHAR NOT NULL,
    labelled_at       TIMESTAMPTZ NOT NULL
);

-- Prompt templates used by runs: the text and its hash.
CREATE TABLE prompt_templates (
    prompt_version    VARCHAR NOT NULL,
    template_hash     VARCHAR NOT NULL,
    text              VARCHAR NOT NULL
);

-- migration: 002_run_chunks
-- Batch runs (truss_lab/_batch.py): per-chunk progress, so a killed run resumes
-- where it stopped. A chunk's row lands in the same transaction as the chunk's
-- candidates, lessons and errors, so "chunk done" and "chunk written" agree.
ALTER TABLE extraction_runs ADD COLUMN error VARCHAR;     -- why a run failed
ALTER TABLE extraction_runs ADD COLUMN seconds DOUBLE;    -- active wall time, summed over resumes

CREATE TABLE run_chunks (
    run_id            VARCHAR NOT NULL,
    chunk_index       INTEGER NOT NULL,  -- position of the chunk in the run's batch
    first_seq         BIGINT,
    last_seq          BIGINT,
    n_verdicts        BIGINT NOT NULL,
    n_candidates      BIGINT NOT NULL,
    n_lessons         BIGINT NOT NULL,   -- memory rows of the chunk (passed the gate, written)
    n_lessons_new     BIGINT NOT NULL,   -- of those, entries not already in memory_entries
    n_errors          BIGINT NOT NULL,
    provider_calls    BIGINT NOT NULL,
    finished_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, chunk_index)
);

-- migration: 003_run_verdicts
-- Which verdicts each run processed, including those that yielded no
-- candidate: a comparison of two runs needs the verdicts where an extractor
-- proposed nothing, and the audit needs to know what a run covered.
CREATE TABLE run_verdicts (
    run_id            VARCHAR NOT NULL,
    verdict_seq       BIGINT NOT NULL,
    verdict_hash      VARCHAR NOT NULL
);

-- migration: 004_consistent_names
-- One name per fact (issue #10): the extractor id is extractor_id everywhere,
-- the threshold column is named like the config setting it records, and the
-- scores table, which nothing wrote, is gone (a sweep thresholds a candidates
-- column). RENAME keeps every value and the column's position.
ALTER TABLE completions RENAME COLUMN extractor TO extractor_id;
ALTER TABLE labels RENAME COLUMN extractor TO extractor_id;
ALTER TABLE extraction_runs RENAME COLUMN min_salience TO extraction_min_salience;
DROP TABLE scores;

-- migration: 005_references
-- Reference lessons (Formats §4): what an annotator says a verdict should
-- teach, independent of any extractor. Named reference_lessons because
-- REFERENCES is an SQL keyword. A verdict an annotator found nothing to teach
-- in has one row with reference_id 'none' and empty text; a verdict with no
-- row at all is not annotated.
CREATE TABLE reference_lessons (
    verdict_hash      VARCHAR NOT NULL,
    reference_id      VARCHAR NOT NULL,  -- r1, r2 ... or 'none'
    text              VARCHAR NOT NULL,
    evidence          VARCHAR[] NOT NULL,
    annotator         VARCHAR NOT NULL,  -- '' when the file gave none
    source            VARCHAR NOT NULL,
    annotated_at      TIMESTAMPTZ NOT NULL  -- when this database received it
);

-- migration: 006_lab_journal
-- Two chains (docs/explanation/two-chains.md). The journal table is the verdict
-- journal: a faithful copy of upstream Truss that grows only by importing
-- upstream exports. The lab's own signed entries (threshold proposals, sweep
-- results) form a chain of their own here, same columns, signed by the
-- researcher's key; each one's signed payload records, as "verdict_head"
-- ({seq, hash}), the verdict-journal head it was decided on. A separate table
-- (not a chain column in journal) keeps seq and hash the journal's keys, and
-- every reader of verdicts unchanged.
CREATE TABLE lab_journal (
    seq         BIGINT PRIMARY KEY,
    kind        VARCHAR NOT NULL,
    ts          VARCHAR NOT NULL,
    key_id      VARCHAR NOT NULL,
    payload     JSON NOT NULL,
    prev_hash   VARCHAR NOT NULL,
    hash        VARCHAR NOT NULL UNIQUE,
    signature   VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);
-- Before this migration the lab's entries (kind policy_record) were appended to
-- the verdict journal. Those after every upstream entry move here unchanged:
-- their signature covers their seq and prev_hash, so they keep both, and the
-- lab chain then starts with them, linked to the verdict entry just before the
-- first of them (verify_chain checks that link; a 0.1.0 database's proposal at
-- seq 41 moves, and the verdict journal ends at seq 40 again, ready for the
-- next upstream export). A lab entry with upstream entries after it cannot move
-- without breaking the verdict chain: it stays, and verifies with that chain.
INSERT INTO lab_journal
    SELECT * FROM journal WHERE kind = 'policy_record'
    AND seq > (SELECT coalesce(max(seq), 0) FROM journal WHERE kind <> 'policy_record');
DELETE FROM journal WHERE seq IN (SELECT seq FROM lab_journal);
COMMENT ON TABLE lab_journal IS 'The lab''s own signed chain (threshold proposals): same columns as journal; each payload records verdict_head, the verdict-journal head it was decided on; verify with truss-lab verify';
COMMENT ON COLUMN lab_journal.seq IS 'Position in the lab chain, no gaps (a database from before 006 starts where its moved entries were)';
COMMENT ON COLUMN lab_journal.kind IS 'Entry kind, e.g. policy_record (a threshold proposal)';
COMMENT ON COLUMN lab_journal.ts IS 'RFC 3339 time exactly as signed (text)';
COMMENT ON COLUMN lab_journal.key_id IS 'Signing key (signing_keys.key_id), the researcher''s';
COMMENT ON COLUMN lab_journal.payload IS 'The entry body as RFC 8785 canonical JSON, with verdict_head {seq, hash}';
COMMENT ON COLUMN lab_journal.prev_hash IS 'hash of the lab entry before (64 zeros for seq 1; for the first entry moved by 006, the verdict entry before it)';
COMMENT ON COLUMN lab_journal.hash IS 'Lowercase hex SHA-256 of the canonical {seq, kind, ts, key_id, payload, prev_hash}';
COMMENT ON COLUMN lab_journal.signature IS 'Base64 Ed25519 signature over the 32 raw bytes of hash';
COMMENT ON COLUMN lab_journal.recorded_at IS 'When this database wrote it';

-- migration: 007_run_names
-- Issue #13. Runs get a human name and tags (shown by `truss-lab runs`, set by
-- `truss-lab extract --name/--tag`); two views for the joins everyone writes;
-- a comment on every table and column (DuckDB's COMMENT ON: read them back with
-- `SELECT table_name, comment FROM duckdb_tables()` or `duckdb_columns()`).
ALTER TABLE extraction_runs ADD COLUMN name VARCHAR;
ALTER TABLE extraction_runs ADD COLUMN tags VARCHAR[];

-- Each candidate of each run with its majority gold label, as
-- truss_lab.evaluate.labelled_candidates computes it (valid or not: filter on valid).
CREATE VIEW labelled_candidates AS
SELECT c.candidate_id, c.run_id, c.verdict_seq, c.verdict_hash, c.extractor_id,
       c.lesson_index, c.text, c.salience, c.evidence, c.valid, c.drop_reason, c.score,
       c.scorer, c.passed_gate, c.entry_id,
       l.label, coalesce(l.tie, false) AS tie,
       coalesce(l.n_annotators, 0) AS n_annotators,
       coalesce(l.n_positive, 0) AS n_positive,
       l.label IS NOT NULL AS labelled
FROM candidates c
LEFT JOIN (
    SELECT verdict_hash, extractor_id, lesson_index,
           count(*) AS n_annotators,
           sum(useful)::BIGINT AS n_positive,
           2 * sum(useful) = count(*) AS tie,
           (CASE WHEN 2 * sum(useful) > count(*) THEN 1
                 WHEN 2 * sum(useful) < count(*) THEN 0 END)::TINYINT AS label
    FROM labels GROUP BY verdict_hash, extractor_id, lesson_index
) l ON l.verdict_hash = c.verdict_hash AND l.extractor_id = c.extractor_id
   AND l.lesson_index = c.lesson_index;

-- Each lesson in memory with the signed verdict that produced it.
CREATE VIEW lesson_verdicts AS
SELECT m.entry_id, m.text, m.salience, m.trust, m.evidence, m.lesson_index,
       m.extractor_id, m.run_id, m.prompt_version, m.created_at, m.superseded_by,
       j.seq AS verdict_seq, j.hash AS verdict_hash, j.ts AS verdict_ts,
       j.payload->>'contract_id' AS contract_id, j.payload->>'run_id' AS contract_run_id,
       j.payload->>'goal' AS goal, j.payload->>'verdict' AS verdict,
       j.payload->>'summary' AS summary
FROM memory_entries m
JOIN journal j ON j.seq = m.produced_by_seq AND j.hash = m.produced_by_hash
WHERE m.kind = 'lesson';

COMMENT ON VIEW labelled_candidates IS 'Every candidate with its majority gold label (label 1 useful, 0 not, NULL unlabelled or tied), n_annotators and n_positive; labelled = label IS NOT NULL';
COMMENT ON VIEW lesson_verdicts IS 'Every lesson in memory with the signed verdict that produced it (goal, verdict, summary from the journal payload)';

COMMENT ON TABLE schema_version IS 'Migrations applied to this database, one row each';
COMMENT ON COLUMN schema_version.version IS 'Migration number (the NNN of -- migration: NNN_name in schema.sql)';
COMMENT ON COLUMN schema_version.name IS 'Migration name';
COMMENT ON COLUMN schema_version.applied_at IS 'When this database applied it (UTC)';

COMMENT ON TABLE journal IS 'The signed, append-only, hash-chained journal (truss-lab schema journal); verify with truss-lab verify';
COMMENT ON COLUMN journal.seq IS 'Position in the chain, from 1, no gaps';
COMMENT ON COLUMN journal.kind IS 'Entry kind: contract_verdict, or another signed record (e.g. a threshold decision)';
COMMENT ON COLUMN journal.ts IS 'RFC 3339 time exactly as signed (text)';
COMMENT ON COLUMN journal.key_id IS 'Signing key (signing_keys.key_id)';
COMMENT ON COLUMN journal.payload IS 'The entry body as RFC 8785 canonical JSON (for a verdict: contract_id, run_id, goal, verdict, summary, checks, tags)';
COMMENT ON COLUMN journal.prev_hash IS 'hash of the entry before (64 zeros for seq 1)';
COMMENT ON COLUMN journal.hash IS 'Lowercase hex SHA-256 of the canonical {seq, kind, ts, key_id, payload, prev_hash}';
COMMENT ON COLUMN journal.signature IS 'Base64 Ed25519 signature over the 32 raw bytes of hash';
COMMENT ON COLUMN journal.recorded_at IS 'When this database received the entry (UTC)';

COMMENT ON TABLE signing_keys IS 'Public keys that sign journal entries (never a private key)';
COMMENT ON COLUMN signing_keys.key_id IS 'Key name, as in journal.key_id';
COMMENT ON COLUMN signing_keys.public_key IS 'Standard base64 of the raw 32-byte Ed25519 public key';
COMMENT ON COLUMN signing_keys.added_at IS 'When the key was added (UTC)';

COMMENT ON TABLE memory_entries IS 'Governed memory (ADR 0011): lessons are kind=lesson, trust=unverified, produced by a verdict';
COMMENT ON COLUMN memory_entries.entry_id IS 'Id derived from (verdict hash, extractor_id, lesson_index): a repeat write is a no-op';
COMMENT ON COLUMN memory_entries.kind IS 'Entry kind (lesson for SI-1)';
COMMENT ON COLUMN memory_entries.trust IS 'Trust level (unverified for every lesson; nothing promotes one)';
COMMENT ON COLUMN memory_entries.text IS 'The lesson text';
COMMENT ON COLUMN memory_entries.salience IS 'The score the gate compared with extraction_min_salience';
COMMENT ON COLUMN memory_entries.evidence IS 'Evidence strings the extractor gave (e.g. check:<name>)';
COMMENT ON COLUMN memory_entries.lesson_index IS '0-based position of the lesson in its completion';
COMMENT ON COLUMN memory_entries.produced_by_seq IS 'Governed provenance: seq of the journal entry that justified the write (the verdict)';
COMMENT ON COLUMN memory_entries.produced_by_hash IS 'Governed provenance: hash of that journal entry';
COMMENT ON COLUMN memory_entries.sources IS 'Journal references the entry rests on (includes produced_by)';
COMMENT ON COLUMN memory_entries.extractor_id IS 'Extractor configuration that proposed it';
COMMENT ON COLUMN memory_entries.run_id IS 'Extraction run that first wrote it (extraction_runs.run_id)';
COMMENT ON COLUMN memory_entries.prompt_version IS 'Prompt template version used';
COMMENT ON COLUMN memory_entries.created_at IS 'When it was written (UTC)';
COMMENT ON COLUMN memory_entries.superseded_by IS 'entry_id of the entry that replaces it, if any';

COMMENT ON TABLE policy_records IS 'Typed, versioned policy records (e.g. a proposed extraction_min_salience); never applied by truss_lab';
COMMENT ON COLUMN policy_records.record_id IS 'Record id';
COMMENT ON COLUMN policy_records.policy_id IS 'Policy the record is a version of (e.g. extraction_min_salience)';
COMMENT ON COLUMN policy_records.target IS 'PolicyTarget: routing, persona_self, tool_set, verification, salience, goal_repinning';
COMMENT ON COLUMN policy_records.version IS 'Version within policy_id, from 1';
COMMENT ON COLUMN policy_records.settings IS 'The settings as JSON';
COMMENT ON COLUMN policy_records.trust IS 'Trust level (unverified when proposed)';
COMMENT ON COLUMN policy_records.produced_by_seq IS 'Governed provenance: seq of the signed journal entry (the decision evidence)';
COMMENT ON COLUMN policy_records.produced_by_hash IS 'Governed provenance: hash of that journal entry';
COMMENT ON COLUMN policy_records.sources IS 'Journal references the record rests on';
COMMENT ON COLUMN policy_records.extractor_id IS 'Extractor of the run the decision was made on, if any';
COMMENT ON COLUMN policy_records.run_id IS 'Run the decision was made on, if any';
COMMENT ON COLUMN policy_records.created_at IS 'When it was written (UTC)';
COMMENT ON COLUMN policy_records.supersedes IS 'record_id this version replaces';
COMMENT ON COLUMN policy_records.superseded_by IS 'record_id of the version that replaces it (NULL for the current head)';

COMMENT ON TABLE events IS 'AgentEvent stream: one memory_write per memory entry, one policy_write per policy record';
COMMENT ON COLUMN events.event_id IS 'Event id (derived from the subject)';
COMMENT ON COLUMN events.type IS 'memory_write or policy_write';
COMMENT ON COLUMN events.subject_id IS 'entry_id or record_id written';
COMMENT ON COLUMN events.kind IS 'Kind of the entry written';
COMMENT ON COLUMN events.trust IS 'Trust of the entry written';
COMMENT ON COLUMN events.produced_by_seq IS 'Governed provenance of the write: journal seq';
COMMENT ON COLUMN events.produced_by_hash IS 'Governed provenance of the write: journal hash';
COMMENT ON COLUMN events.run_id IS 'Run that wrote it, if any';
COMMENT ON COLUMN events.ts IS 'When (UTC)';

COMMENT ON TABLE extraction_runs IS 'One row per extraction run: its configuration, status and counts (truss-lab runs)';
COMMENT ON COLUMN extraction_runs.run_id IS 'Run id (given with --run-id or generated)';
COMMENT ON COLUMN extraction_runs.extractor_id IS 'Extractor configuration (provider + prompt + model)';
COMMENT ON COLUMN extraction_runs.provider IS 'Provider name (replay, heuristic, openai-compatible)';
COMMENT ON COLUMN extraction_runs.policy IS 'Lesson extraction policy: off, on or model-scored';
COMMENT ON COLUMN extraction_runs.extraction_min_salience IS 'The gate threshold of model-scored';
COMMENT ON COLUMN extraction_runs.scorer IS 'name@version of the score the gate used';
COMMENT ON COLUMN extraction_runs.write_memory IS 'False for a dry run (candidates only)';
COMMENT ON COLUMN extraction_runs.config IS 'The run configuration as JSON (policy, threshold, batch, executor, extractor spec)';
COMMENT ON COLUMN extraction_runs.prompt_version IS 'Prompt template version';
COMMENT ON COLUMN extraction_runs.prompt_hash IS 'Hash of the prompt template text (prompt_templates.template_hash)';
COMMENT ON COLUMN extraction_runs.dataset_hash IS 'SHA-256 of the batch verdict hashes (a resume must match)';
COMMENT ON COLUMN extraction_runs.code_version IS 'truss_lab version that ran it';
COMMENT ON COLUMN extraction_runs.started_at IS 'When the run started (UTC)';
COMMENT ON COLUMN extraction_runs.finished_at IS 'When it last finished or failed (UTC)';
COMMENT ON COLUMN extraction_runs.status IS 'running, finished or failed (running after a kill)';
COMMENT ON COLUMN extraction_runs.n_verdicts IS 'Verdicts processed';
COMMENT ON COLUMN extraction_runs.n_candidates IS 'Candidate lessons proposed';
COMMENT ON COLUMN extraction_runs.n_lessons IS 'Candidates that passed the gate and were written';
COMMENT ON COLUMN extraction_runs.n_errors IS 'Per-verdict errors (verdict_errors rows)';
COMMENT ON COLUMN extraction_runs.provider_calls IS 'Calls made to the provider';
COMMENT ON COLUMN extraction_runs.error IS 'Why the run failed, if it did';
COMMENT ON COLUMN extraction_runs.seconds IS 'Active wall time in seconds, summed over resumes';
COMMENT ON COLUMN extraction_runs.name IS 'A human name for the run (extract --name)';
COMMENT ON COLUMN extraction_runs.tags IS 'Free tags (extract --tag, repeatable)';

COMMENT ON TABLE candidates IS 'Every candidate lesson of every run, kept whether it passed the gate or not';
COMMENT ON COLUMN candidates.candidate_id IS 'Id derived from (verdict_hash, extractor_id, lesson_index)';
COMMENT ON COLUMN candidates.run_id IS 'Run that proposed it';
COMMENT ON COLUMN candidates.verdict_seq IS 'The verdict the candidate is about: journal seq';
COMMENT ON COLUMN candidates.verdict_hash IS 'The verdict the candidate is about: journal hash';
COMMENT ON COLUMN candidates.extractor_id IS 'Extractor configuration';
COMMENT ON COLUMN candidates.lesson_index IS '0-based position in the completion lessons array (dropped lessons keep theirs)';
COMMENT ON COLUMN candidates.text IS 'Lesson text';
COMMENT ON COLUMN candidates.salience IS 'The model''s own salience (NULL when invalid)';
COMMENT ON COLUMN candidates.evidence IS 'Evidence strings';
COMMENT ON COLUMN candidates.valid IS 'False when the parser dropped the lesson (see drop_reason)';
COMMENT ON COLUMN candidates.drop_reason IS 'Why the parser dropped it';
COMMENT ON COLUMN candidates.score IS 'The score the gate used';
COMMENT ON COLUMN candidates.scorer IS 'name@version of that score';
COMMENT ON COLUMN candidates.passed_gate IS 'True when score >= the run threshold (or policy on)';
COMMENT ON COLUMN candidates.entry_id IS 'The memory entry written, if any';

COMMENT ON TABLE verdict_errors IS 'Per-verdict problems of a run (provider, parse, prompt); the run goes on (truss-lab errors RUN)';
COMMENT ON COLUMN verdict_errors.run_id IS 'Run';
COMMENT ON COLUMN verdict_errors.verdict_seq IS 'The verdict: journal seq';
COMMENT ON COLUMN verdict_errors.verdict_hash IS 'The verdict: journal hash';
COMMENT ON COLUMN verdict_errors.stage IS 'provider, parse or prompt';
COMMENT ON COLUMN verdict_errors.reason IS 'Short machine reason (provider_error, not_json, ...)';
COMMENT ON COLUMN verdict_errors.message IS 'What went wrong, for people';

COMMENT ON TABLE completions IS 'Recorded provider calls (truss-lab schema completions); never an Authorization header';
COMMENT ON COLUMN completions.verdict_hash IS 'The verdict the call was about';
COMMENT ON COLUMN completions.extractor_id IS 'Extractor configuration (the file field extractor)';
COMMENT ON COLUMN completions.model IS 'Model that answered';
COMMENT ON COLUMN completions.prompt_version IS 'Prompt template version';
COMMENT ON COLUMN completions.request_hash IS 'Hash of the request (NULL when recorded elsewhere)';
COMMENT ON COLUMN completions.text IS 'Raw completion text';
COMMENT ON COLUMN completions.latency_ms IS 'Latency of the call in milliseconds';
COMMENT ON COLUMN completions.prompt_tokens IS 'Prompt tokens, when reported';
COMMENT ON COLUMN completions.completion_tokens IS 'Completion tokens, when reported';
COMMENT ON COLUMN completions.source IS 'File it came from, or live';
COMMENT ON COLUMN completions.recorded_at IS 'When it was recorded (UTC)';

COMMENT ON TABLE labels IS 'Gold labels of candidate lessons (truss-lab schema labels)';
COMMENT ON COLUMN labels.verdict_hash IS 'The verdict';
COMMENT ON COLUMN labels.extractor_id IS 'Extractor configuration (the file field extractor)';
COMMENT ON COLUMN labels.lesson_index IS '0-based position in the completion lessons array';
COMMENT ON COLUMN labels.useful IS '1 useful, 0 not';
COMMENT ON COLUMN labels.annotator IS 'Annotator name (empty when the file gave none)';
COMMENT ON COLUMN labels.source IS 'File it came from';
COMMENT ON COLUMN labels.labelled_at IS 'When it was loaded (UTC)';

COMMENT ON TABLE prompt_templates IS 'Prompt templates runs used: the text and its hash';
COMMENT ON COLUMN prompt_templates.prompt_version IS 'Template version (e.g. lesson-v1)';
COMMENT ON COLUMN prompt_templates.template_hash IS 'SHA-256 of the text';
COMMENT ON COLUMN prompt_templates.text IS 'The template text';

COMMENT ON TABLE run_chunks IS 'Per-chunk progress of a batch run, so a killed run resumes where it stopped';
COMMENT ON COLUMN run_chunks.run_id IS 'Run';
COMMENT ON COLUMN run_chunks.chunk_index IS 'Position of the chunk in the run batch';
COMMENT ON COLUMN run_chunks.first_seq IS 'First verdict seq of the chunk';
COMMENT ON COLUMN run_chunks.last_seq IS 'Last verdict seq of the chunk';
COMMENT ON COLUMN run_chunks.n_verdicts IS 'Verdicts in the chunk';
COMMENT ON COLUMN run_chunks.n_candidates IS 'Candidates proposed';
COMMENT ON COLUMN run_chunks.n_lessons IS 'Memory rows of the chunk (passed the gate, written)';
COMMENT ON COLUMN run_chunks.n_lessons_new IS 'Of those, entries not already in memory_entries';
COMMENT ON COLUMN run_chunks.n_errors IS 'Per-verdict errors';
COMMENT ON COLUMN run_chunks.provider_calls IS 'Provider calls';
COMMENT ON COLUMN run_chunks.finished_at IS 'When the chunk was written (UTC)';

COMMENT ON TABLE run_verdicts IS 'Which verdicts each run processed, including those that yielded no candidate';
COMMENT ON COLUMN run_verdicts.run_id IS 'Run';
COMMENT ON COLUMN run_verdicts.verdict_seq IS 'The verdict: journal seq';
COMMENT ON COLUMN run_verdicts.verdict_hash IS 'The verdict: journal hash';

-- View columns: a copied column says where it comes from.
COMMENT ON COLUMN labelled_candidates.candidate_id IS 'As candidates.candidate_id';
COMMENT ON COLUMN labelled_candidates.run_id IS 'As candidates.run_id';
COMMENT ON COLUMN labelled_candidates.verdict_seq IS 'As candidates.verdict_seq';
COMMENT ON COLUMN labelled_candidates.verdict_hash IS 'As candidates.verdict_hash';
COMMENT ON COLUMN labelled_candidates.extractor_id IS 'As candidates.extractor_id';
COMMENT ON COLUMN labelled_candidates.lesson_index IS 'As candidates.lesson_index';
COMMENT ON COLUMN labelled_candidates.text IS 'As candidates.text';
COMMENT ON COLUMN labelled_candidates.salience IS 'As candidates.salience';
COMMENT ON COLUMN labelled_candidates.evidence IS 'As candidates.evidence';
COMMENT ON COLUMN labelled_candidates.valid IS 'As candidates.valid';
COMMENT ON COLUMN labelled_candidates.drop_reason IS 'As candidates.drop_reason';
COMMENT ON COLUMN labelled_candidates.score IS 'As candidates.score';
COMMENT ON COLUMN labelled_candidates.scorer IS 'As candidates.scorer';
COMMENT ON COLUMN labelled_candidates.passed_gate IS 'As candidates.passed_gate';
COMMENT ON COLUMN labelled_candidates.entry_id IS 'As candidates.entry_id';
COMMENT ON COLUMN labelled_candidates.label IS 'Majority gold label: 1 useful, 0 not, NULL when unlabelled or tied';
COMMENT ON COLUMN labelled_candidates.tie IS 'True when exactly half the annotations say useful';
COMMENT ON COLUMN labelled_candidates.n_annotators IS 'Labels of the candidate (0 when unlabelled)';
COMMENT ON COLUMN labelled_candidates.n_positive IS 'Of those, labels saying useful';
COMMENT ON COLUMN labelled_candidates.labelled IS 'label IS NOT NULL: the rows a sweep can score';
COMMENT ON COLUMN lesson_verdicts.entry_id IS 'As memory_entries.entry_id';
COMMENT ON COLUMN lesson_verdicts.text IS 'As memory_entries.text';
COMMENT ON COLUMN lesson_verdicts.salience IS 'As memory_entries.salience';
COMMENT ON COLUMN lesson_verdicts.trust IS 'As memory_entries.trust';
COMMENT ON COLUMN lesson_verdicts.evidence IS 'As memory_entries.evidence';
COMMENT ON COLUMN lesson_verdicts.lesson_index IS 'As memory_entries.lesson_index';
COMMENT ON COLUMN lesson_verdicts.extractor_id IS 'As memory_entries.extractor_id';
COMMENT ON COLUMN lesson_verdicts.run_id IS 'As memory_entries.run_id';
COMMENT ON COLUMN lesson_verdicts.prompt_version IS 'As memory_entries.prompt_version';
COMMENT ON COLUMN lesson_verdicts.created_at IS 'As memory_entries.created_at';
COMMENT ON COLUMN lesson_verdicts.superseded_by IS 'As memory_entries.superseded_by';
COMMENT ON COLUMN lesson_verdicts.verdict_seq IS 'The verdict (journal.seq = memory_entries.produced_by_seq)';
COMMENT ON COLUMN lesson_verdicts.verdict_hash IS 'The verdict (journal.hash)';
COMMENT ON COLUMN lesson_verdicts.verdict_ts IS 'journal.ts of the verdict';
COMMENT ON COLUMN lesson_verdicts.contract_id IS 'payload contract_id of the verdict';
COMMENT ON COLUMN lesson_verdicts.contract_run_id IS 'payload run_id of the verdict (the contract run, not an extraction run)';
COMMENT ON COLUMN lesson_verdicts.goal IS 'payload goal of the verdict';
COMMENT ON COLUMN lesson_verdicts.verdict IS 'payload verdict: pass, fail or partial';
COMMENT ON COLUMN lesson_verdicts.summary IS 'payload summary of the verdict';

COMMENT ON TABLE reference_lessons IS 'Reference lessons: what an annotator says a verdict should teach, independent of any extractor (truss-lab schema references)';
COMMENT ON COLUMN reference_lessons.verdict_hash IS 'The verdict';
COMMENT ON COLUMN reference_lessons.reference_id IS 'r1, r2 ... or none (the annotator found nothing to teach)';
COMMENT ON COLUMN reference_lessons.text IS 'The reference lesson (empty for none)';
COMMENT ON COLUMN reference_lessons.evidence IS 'Evidence strings';
COMMENT ON COLUMN reference_lessons.annotator IS 'Annotator name (empty when the file gave none)';
COMMENT ON COLUMN reference_lessons.source IS 'File it came from';
COMMENT ON COLUMN reference_lessons.annotated_at IS 'When this database received it (UTC)';

-- migration: 008_extractor_configs
-- Issue #16. The extractor configuration (provider, model, prompt version,
-- response_format, sampling, samples per verdict) is one hashed value, part of
-- every request hash. It is kept once per hash, named by each live recording
-- and by the run record, so `replay:EXTRACTOR_ID` rebuilds the same requests.
-- completions.run_id is the run whose live call made a recording (usage per run).
CREATE TABLE extractor_configs (
    config_hash       VARCHAR PRIMARY KEY,
    config            JSON NOT NULL,
    recorded_at       TIMESTAMPTZ NOT NULL
);
ALTER TABLE completions ADD COLUMN config_hash VARCHAR;
ALTER TABLE completions ADD COLUMN run_id VARCHAR;
ALTER TABLE extraction_runs ADD COLUMN config_hash VARCHAR;
COMMENT ON TABLE extractor_configs IS 'Extractor configurations (truss_lab.extract.ExtractorConfig), one row per configuration hash';
COMMENT ON COLUMN extractor_configs.config_hash IS 'SHA-256 of the canonical JSON of the configuration; part of every request hash';
COMMENT ON COLUMN extractor_configs.config IS 'provider, model, prompt_version, response_format, temperature, top_p, seed, max_tokens, samples';
COMMENT ON COLUMN extractor_configs.recorded_at IS 'When it was first recorded (UTC)';
COMMENT ON COLUMN completions.config_hash IS 'Extractor configuration of a live recording (extractor_configs); NULL when recorded elsewhere';
COMMENT ON COLUMN completions.run_id IS 'Run whose live call made the recording; NULL when ingested from a file';
COMMENT ON COLUMN extraction_runs.config_hash IS 'Extractor configuration of the run (extractor_configs); NULL for extractors without one';

-- migration: 009_samples
-- Issue #16 item 2: several samples per verdict. A candidate, a recording and a
-- per-verdict error name the sample they came from (0..k-1; 0 for every row of
-- a one-sample run, so rows written before this migration read as sample 0).
-- candidates.self_consistency is the self-consistency salience of the
-- candidate's cluster (truss_lab.score.self_consistency): NULL for one-sample
-- runs and for candidates that represent no cluster.
ALTER TABLE candidates ADD COLUMN sample_index INTEGER DEFAULT 0;
ALTER TABLE candidates ADD COLUMN self_consistency DOUBLE;
ALTER TABLE completions ADD COLUMN sample_index INTEGER DEFAULT 0;
ALTER TABLE verdict_errors ADD COLUMN sample_index INTEGER DEFAULT 0;
COMMENT ON COLUMN candidates.sample_index IS 'Which of the verdict''s k samples (completions) the lesson came from, 0-based; 0 when the run drew one';
COMMENT ON COLUMN candidates.self_consistency IS 'Share of the verdict''s samples holding a near-duplicate of this lesson, set on cluster representatives of a k>1 run (NULL otherwise)';
COMMENT ON COLUMN completions.sample_index IS 'Which sample of the verdict the recording answers, 0-based (0 for one-sample extractors and files without the field)';
COMMENT ON COLUMN verdict_errors.sample_index IS 'Which sample of the verdict failed, 0-based';

-- migration: 010_match_labels
-- Issue #26 item 1. People's answers to "which reference does this lesson
-- express?" (Formats §5): the human truth a matcher (lexical, semantic, a
-- judge) is checked against, and that corrects reference-based estimates. One
-- row per (lesson, annotator); reference_id '' says the lesson expresses none
-- of its verdict's references. The verdicts with rows are a sample; a sampled
-- verdict has a row for every lesson (the ingest refuses a partial one).
CREATE TABLE match_labels (
    verdict_hash          VARCHAR NOT NULL,
    extractor_id          VARCHAR NOT NULL,
    lesson_index          INTEGER NOT NULL,
    reference_id          VARCHAR NOT NULL,  -- '' when the lesson expresses none
    annotator             VARCHAR NOT NULL,  -- '' when the file gave none
    inclusion_probability DOUBLE,            -- NULL: a simple random sample
    source                VARCHAR NOT NULL,
    labelled_at           TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE match_labels IS 'Match labels: which reference of its verdict a person says a lesson expresses (truss-lab schema match-labels)';
COMMENT ON COLUMN match_labels.verdict_hash IS 'The verdict';
COMMENT ON COLUMN match_labels.extractor_id IS 'The extractor whose lesson it is';
COMMENT ON COLUMN match_labels.lesson_index IS '0-based position of the lesson in the completion (as in labels)';
COMMENT ON COLUMN match_labels.reference_id IS 'A reference_id of the verdict (reference_lessons), or empty: the lesson expresses none';
COMMENT ON COLUMN match_labels.annotator IS 'Annotator name (empty when the file gave none)';
COMMENT ON COLUMN match_labels.inclusion_probability IS 'Probability the verdict was drawn into the sample (equal within a verdict); NULL for a simple random sample';
COMMENT ON COLUMN match_labels.source IS 'File it came from';
COMMENT ON COLUMN match_labels.labelled_at IS 'When this database received it (UTC)';

-- migration: 011_recordings_by_run
-- Issue 27 item 3: a live recording belongs to the run that paid for the call.
-- Live recordings are keyed (run_id, verdict_hash, extractor_id, sample_index)
-- (store/_tables.py RECORDING_KEY), so a second live run with the same settings
-- is recorded beside the first instead of dropped, `truss-lab usage` bills each
-- run its own calls, and `truss-lab rerun RUN` replays a run from its own
-- answers. A replay by extractor id (`replay:EXTRACTOR_ID`) answers each verdict
-- and sample from its earliest recording, as before there could be several.
-- A database from before 008 recorded live calls without their run: each goes to
-- the one run of its extractor that called a provider live, when there is
-- exactly one; otherwise it stays NULL (no run can claim it).
UPDATE completions SET run_id = (
    SELECT min(r.run_id) FROM extraction_runs r
    WHERE r.extractor_id = completions.extractor_id
    AND r.provider NOT IN ('replay', 'heuristic'))
WHERE run_id IS NULL AND source = 'live' AND (
    SELECT count(*) FROM extraction_runs r
    WHERE r.extractor_id = completions.extractor_id
    AND r.provider NOT IN ('replay', 'heuristic')) = 1;
COMMENT ON TABLE completions IS 'Recorded provider calls (truss-lab schema completions): ingested files, and every live call under the run that paid for it; never an Authorization header';
COMMENT ON COLUMN completions.run_id IS 'Run whose live call made the recording (it owns it: truss-lab usage bills it, truss-lab rerun replays it); NULL when ingested from a file or made by a judge';

-- migration: 012_prompts
-- Issue #27 item 1: prompt templates registered from files (Formats §6,
-- `truss-lab prompts add FILE`), one row per prompt version, stored once with
-- the SHA-256 of the template (the hash runs record as prompt_hash). A name is
-- registered with one text only; prompt_templates keeps what each run used.
CREATE TABLE prompts (
    name              VARCHAR PRIMARY KEY,
    kind              VARCHAR NOT NULL,   -- lesson | judge | match
    description       VARCHAR NOT NULL,
    system_text       VARCHAR NOT NULL,
    user_template     VARCHAR NOT NULL,   -- the file's {placeholder} spelling
    template_hash     VARCHAR NOT NULL,
    source            VARCHAR NOT NULL,
    registered_at     TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE prompts IS 'Prompt templates registered from files (truss-lab prompts add; Formats §6), one row per prompt version';
COMMENT ON COLUMN prompts.name IS 'The prompt version (prompt_version of every call made with it)';
COMMENT ON COLUMN prompts.kind IS 'lesson (extract), judge (judge) or match (match)';
COMMENT ON COLUMN prompts.description IS 'For people; not part of the hash';
COMMENT ON COLUMN prompts.system_text IS 'The system message, sent as written';
COMMENT ON COLUMN prompts.user_template IS 'The user message template with {placeholder} fields (truss-lab schema prompt)';
COMMENT ON COLUMN prompts.template_hash IS 'SHA-256 of the template text (prompt_templates.template_hash, extraction_runs.prompt_hash)';
COMMENT ON COLUMN prompts.source IS 'File it was registered from';
COMMENT ON COLUMN prompts.registered_at IS 'When this database registered it (UTC)';

-- migration: 013_judge_recordings_by_run
-- Issue 27 items 3 and 5 for the judges: a judge's or judge matcher's live call
-- belongs to the judge run that paid for it, the judge on one extraction run. Its
-- recordings are keyed by the run it judged too (store/_tables.py RECORDING_KEY),
-- so two runs of one extractor judged live each keep their calls (the second's
-- were dropped: the key was the judged extractor's), and each judge run replays
-- and resumes from its own. Calls recorded before this migration keep NULL: no
-- judge run can be told from another, and they still replay for every run of
-- their extractor (truss_lab.evaluate._judges.RecordedCalls).
ALTER TABLE completions ADD COLUMN judged_run_id VARCHAR;
COMMENT ON COLUMN completions.judged_run_id IS 'For a judge''s or judge matcher''s live call: the extraction run whose lessons it judged (the judge run that paid for it); NULL for an extractor''s calls, a file''s rows and judge calls recorded before migration 013';

-- migration: 014_content_claims
-- Issue 39 item 8: integrity claims over rows no signature covers. At the end of every
-- extraction run (finished or failed) the store records, per table the run wrote
-- (candidates, memory_entries, events, verdict_errors, run_chunks,
-- run_verdicts, its live completions), the row count and a digest of the rows; every
-- append to an ingested table (labels, reference_lessons, match_labels, the
-- completions of no run) records the table's. `truss-lab audit` (check
-- content_claims_hold) recomputes each: a flipped label, a deleted run_chunks or
-- reference row, an edited lesson or completion text no longer passes. The digest is
-- the sum of the first 60 bits of each row's SHA-256 (order-free, so a claim is
-- computed in one vectorized pass); it is not signed: it catches an edit made without
-- recomputing the claim (docs/explanation/reliability.md says what it does not).
-- Databases migrated from before get their claims at migration (store/_claims.py).
CREATE TABLE content_claims (
    scope             VARCHAR NOT NULL,  -- run | table
    subject           VARCHAR NOT NULL,  -- the run id, or the table's name
    part              VARCHAR NOT NULL,  -- the table whose rows are claimed
    columns           VARCHAR NOT NULL,  -- the columns hashed, comma-separated, in order
    n_rows            BIGINT NOT NULL,
    digest            VARCHAR NOT NULL,
    recorded_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, subject, part)
);
COMMENT ON TABLE content_claims IS 'Integrity claims: row count and digest of what each run and each ingested table holds, checked by truss-lab audit (content_claims_hold)';
COMMENT ON COLUMN content_claims.scope IS 'run (the rows one extraction run wrote) or table (an ingested table)';
COMMENT ON COLUMN content_claims.subject IS 'The run id, or the table name';
COMMENT ON COLUMN content_claims.part IS 'The table whose rows the claim covers';
COMMENT ON COLUMN content_claims.columns IS 'The columns hashed, comma-separated, in order';
COMMENT ON COLUMN content_claims.n_rows IS 'Rows covered when the claim was recorded';
COMMENT ON COLUMN content_claims.digest IS 'Sum of the first 60 bits of each row SHA-256 (order-free)';
COMMENT ON COLUMN content_claims.recorded_at IS 'When the claim was recorded (UTC)';

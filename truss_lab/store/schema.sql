-- truss_lab DuckDB schema. Ordered migrations: each block starting with
-- "-- migration: NNN_name" runs once, in its own transaction, and is recorded
-- in schema_version.
--
-- Migrations are history: a later block may rename or drop what an earlier one
-- created (004 renames columns and drops the unused scores table), so read the
-- whole file, or `truss-lab schema`, for the current shape.
--
-- Names: the extractor configuration is `extractor_id` in every table (the
-- interchange files of FORMATS.md §2/§3 call it `extractor`; their readers map
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

-- The signed, append-only journal (FORMATS.md §1). payload is the RFC 8785
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

-- Recorded provider calls (FORMATS.md §2); never an Authorization header.
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

-- Gold labels (FORMATS.md §3).
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
-- Reference lessons (FORMATS.md §4): what an annotator says a verdict should
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

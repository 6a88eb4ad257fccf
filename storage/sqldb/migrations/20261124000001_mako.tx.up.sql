-- Market communication with the DSOs: the partner registry with the history
-- of its e-mail contacts, the indexed EDIFACT files and their messages (with
-- the answer of record of each message of ours), the newest message per
-- partner and stream, the mail channel, the IMAP sync positions, the source
-- of our interchange references and the pre-listings for re-sending.
CREATE TABLE mako_registry_imports (
    id             {{.ID}},
    source         TEXT NOT NULL,
    hash           TEXT NOT NULL,
    at             {{.TS}} NOT NULL,
    partners       INTEGER NOT NULL,
    added          INTEGER NOT NULL,
    removed        INTEGER NOT NULL,
    contacts_added INTEGER NOT NULL,
    contacts_ended INTEGER NOT NULL
);
--bun:split
CREATE TABLE mako_partners (
    mp_id          TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    control_area   TEXT NOT NULL DEFAULT '',
    balancing_area TEXT NOT NULL DEFAULT '',
    import_id      BIGINT NOT NULL REFERENCES mako_registry_imports (id)
);
--bun:split
-- A contact is valid from the import that first listed it until the import
-- that no longer did (valid_to NULL while listed). Contacts of partners that
-- left the registry stay, so that old mails are still attributed.
CREATE TABLE mako_contacts (
    id         {{.ID}},
    mp_id      TEXT NOT NULL,
    email      TEXT NOT NULL,
    valid_from {{.TS}} NOT NULL,
    valid_to   {{.TS}}
);
--bun:split
CREATE UNIQUE INDEX mako_contacts_current ON mako_contacts (mp_id, email) WHERE valid_to IS NULL;
--bun:split
CREATE INDEX mako_contacts_email ON mako_contacts (email);
--bun:split
CREATE TABLE mako_edi_files (
    id              {{.ID}},
    object_key      TEXT NOT NULL UNIQUE,
    etag            TEXT NOT NULL,
    size            BIGINT NOT NULL,
    direction       TEXT NOT NULL,
    seen_at         {{.TS}} NOT NULL,
    error           TEXT NOT NULL DEFAULT '',
    interchange_ref TEXT NOT NULL DEFAULT '',
    sender          TEXT NOT NULL DEFAULT '',
    receiver        TEXT NOT NULL DEFAULT '',
    prepared_at     {{.TS}}
);
--bun:split
CREATE INDEX mako_edi_files_errors ON mako_edi_files (seen_at) WHERE error <> '';
--bun:split
-- One row per UNH..UNT message. partner_mp_id is the other side (UNB
-- receiver of ours, UNB sender of theirs); at is DTM+137, else the UNB time.
-- verdict is an acknowledgment's own verdict, and for the other messages of
-- ours the verdict of the answer of record (answered_at its time).
-- ack_ref_* are what an acknowledgment answers.
CREATE TABLE mako_edi_messages (
    id                  {{.ID}},
    file_id             BIGINT NOT NULL REFERENCES mako_edi_files (id) ON DELETE CASCADE,
    seq                 INTEGER NOT NULL,
    direction           TEXT NOT NULL,
    partner_mp_id       TEXT NOT NULL,
    type                TEXT NOT NULL,
    process_id          TEXT NOT NULL DEFAULT '',
    bgm                 TEXT NOT NULL DEFAULT '',
    document_no         TEXT NOT NULL DEFAULT '',
    interchange_ref     TEXT NOT NULL DEFAULT '',
    message_ref         TEXT NOT NULL DEFAULT '',
    at                  {{.TS}} NOT NULL,
    stream              TEXT NOT NULL DEFAULT '',
    verdict             TEXT NOT NULL DEFAULT '',
    answered_at         {{.TS}},
    ack_ref_interchange TEXT NOT NULL DEFAULT '',
    ack_ref_message     TEXT NOT NULL DEFAULT '',
    UNIQUE (file_id, seq)
);
--bun:split
CREATE INDEX mako_edi_messages_interchange ON mako_edi_messages (interchange_ref, partner_mp_id);
--bun:split
CREATE INDEX mako_edi_messages_message ON mako_edi_messages (message_ref, partner_mp_id);
--bun:split
CREATE INDEX mako_edi_messages_document ON mako_edi_messages (document_no, partner_mp_id);
--bun:split
CREATE INDEX mako_edi_messages_stream ON mako_edi_messages (partner_mp_id, stream, at);
--bun:split
CREATE INDEX mako_edi_messages_ack_interchange ON mako_edi_messages (ack_ref_interchange, partner_mp_id) WHERE ack_ref_interchange <> '';
--bun:split
CREATE INDEX mako_edi_messages_ack_message ON mako_edi_messages (ack_ref_message, partner_mp_id) WHERE ack_ref_message <> '';
--bun:split
-- The newest message per partner and stream ('*': of any kind, the newest
-- EDIFACT contact), kept by IndexEDIFiles so that the overview reads a few
-- thousand rows instead of ranking every message.
CREATE TABLE mako_edi_latest (
    partner_mp_id TEXT NOT NULL,
    stream        TEXT NOT NULL,
    message_id    BIGINT NOT NULL,
    at            {{.TS}} NOT NULL,
    PRIMARY KEY (partner_mp_id, stream)
);
--bun:split
CREATE TABLE mako_mails (
    id          {{.ID}},
    source      TEXT NOT NULL UNIQUE,
    folder      TEXT NOT NULL,
    direction   TEXT NOT NULL,
    message_id  TEXT NOT NULL DEFAULT '',
    in_reply_to TEXT NOT NULL DEFAULT '',
    at          {{.TS}} NOT NULL,
    from_addr   TEXT NOT NULL DEFAULT '',
    from_name   TEXT NOT NULL DEFAULT '',
    subject     TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL DEFAULT '',
    attachments TEXT NOT NULL DEFAULT '[]'
);
--bun:split
CREATE UNIQUE INDEX mako_mails_message ON mako_mails (folder, message_id) WHERE message_id <> '';
--bun:split
CREATE INDEX mako_mails_at ON mako_mails (direction, at);
--bun:split
-- The addresses of a mail (role from or to, To and Cc in their order);
-- partner_side marks the partner's side of the mail, the sender of a
-- received mail and the recipients of a sent one, by which mails are
-- attributed to partners.
CREATE TABLE mako_mail_addresses (
    mail_id      BIGINT NOT NULL REFERENCES mako_mails (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    pos          INTEGER NOT NULL,
    address      TEXT NOT NULL,
    partner_side INTEGER NOT NULL,
    at           {{.TS}} NOT NULL,
    PRIMARY KEY (mail_id, role, pos)
);
--bun:split
CREATE INDEX mako_mail_addresses_partner ON mako_mail_addresses (address, at, mail_id) WHERE partner_side = 1;
--bun:split
CREATE TABLE mako_imap_state (
    folder       TEXT PRIMARY KEY,
    uid_validity BIGINT NOT NULL,
    last_uid     BIGINT NOT NULL
);
--bun:split
-- Every row is one interchange reference handed out; identity columns and
-- AUTOINCREMENT never hand out a committed id again.
CREATE TABLE mako_ref_seq (
    id {{.ID}}
);
--bun:split
-- basis fingerprints the stream state that caused a pre-listing; deleting
-- a pre-listing remembers its basis per key in mako_dismissals, so that the
-- automatic noting does not bring it back while the state is the same.
CREATE TABLE mako_vormerkungen (
    mp_id    TEXT NOT NULL,
    stream   TEXT NOT NULL,
    reason   TEXT NOT NULL DEFAULT '',
    noted_at {{.TS}} NOT NULL,
    basis    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (mp_id, stream)
);
--bun:split
CREATE TABLE mako_dismissals (
    mp_id  TEXT NOT NULL,
    stream TEXT NOT NULL,
    basis  TEXT NOT NULL,
    PRIMARY KEY (mp_id, stream)
);

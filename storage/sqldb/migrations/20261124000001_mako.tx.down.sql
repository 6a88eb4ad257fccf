DROP TABLE mako_dismissals;
--bun:split
DROP TABLE mako_vormerkungen;
--bun:split
DROP TABLE mako_ref_seq;
--bun:split
DROP TABLE mako_imap_state;
--bun:split
DROP TABLE mako_mail_addresses;
--bun:split
DROP TABLE mako_mails;
--bun:split
DROP TABLE mako_edi_latest;
--bun:split
DROP TABLE mako_edi_messages;
--bun:split
DROP TABLE mako_edi_files;
--bun:split
DROP TABLE mako_contacts;
--bun:split
DROP TABLE mako_partners;
--bun:split
DROP TABLE mako_registry_imports;

"""Mail in (CONTRACT §9): reading a POP3 mailbox, parsing mails, trimming quoted replies.

Framework-free on purpose: the ingestion service builds on these modules and passes them in.
The submodules are not imported here so that importing one does not pay for the others.
"""

"""Records into the database: the records stream's consumer, batches stored in one transaction
(`store`, `batches`), each call's generation, attempts and charge (`generations`), records
that cannot be stored parked whole (`dead_letters`), and the Celery task of earlier
versions' messages."""

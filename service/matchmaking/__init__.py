"""Ranked matchmaking: who is seated (:mod:`.entrants`), the matcher's decisions
(:mod:`.matcher`) and one replica's matchmaker (:mod:`.service`) over the store's ticket
queue (:mod:`service.store.queue`)."""

-- include: commit, index
-- A commit and its index step in one script: only on a single Redis, where the table's
-- keys and the index shard's are on the same node (a Cluster keeps them in two slots, so
-- it takes the two steps with a write-ahead marker between; docs/redis-store.md).
-- KEYS: 1-3 commit.lua's, then index.lua's 12 keys of the table's index shard
-- ARGV: 1 table id, then commit.lua's ARGV (its marker time 'inline')
-- Returns what commit.lua returns; when it applied a change of the index state, the index
-- step has applied it too.
local commit_keys = {KEYS[1], KEYS[2], KEYS[3]}
local index_keys = {}
for k = 4, #KEYS do index_keys[k - 3] = KEYS[k] end
local args = {}
for a = 2, #ARGV do args[a - 1] = ARGV[a] end
local reply = commit_step(commit_keys, args)
if reply[1] == 1 and reply[10] == 1 then
  index_step(index_keys, {'1', ARGV[1], reply[2], unpack(reply, 3, 9)})
end
return reply

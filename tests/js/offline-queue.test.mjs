// Tests of client_js/offline-queue.js (offline field mode) against a small in-memory stand-in of
// IndexedDB (the part of its API the queue uses): records keyed by submission id, read back in id
// order; a flush sends one body at a time, drops a body only once the server answered it (stored,
// already stored, refused) and stops at a lost send, keeping it and every later one.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { dequeue, enqueue, flushQueue, openQueue, queued, submissionOf } from '../../client_js/offline-queue.js';

/** Return an IDBRequest-like object that succeeds with `compute()` on the next turn. */
function later(compute) {
  const request = {};
  setTimeout(() => {
    request.result = compute();
    request.onsuccess?.();
  });
  return request;
}

/** Return an in-memory stand-in of `indexedDB`: object stores with a keyPath and one index each. */
function memoryIndexedDB() {
  const stores = new Map();
  const db = {
    createObjectStore(name, { keyPath }) {
      const store = { keyPath, records: new Map(), indexes: new Map() };
      stores.set(name, store);
      return { createIndex: (index, path) => store.indexes.set(index, path) };
    },
    transaction(name) {
      const store = stores.get(name);
      const transaction = {};
      setTimeout(() => setTimeout(() => transaction.oncomplete?.()));
      transaction.objectStore = () => ({
        put: (record) => later(() => store.records.set(record[store.keyPath], structuredClone(record))),
        delete: (key) => later(() => store.records.delete(key)),
        index: (index) => ({
          getAll: (value) => later(() => [...store.records.values()]
            .filter((record) => record[store.indexes.get(index)] === value).map((record) => structuredClone(record))),
        }),
      });
      return transaction;
    },
  };
  return {
    stores,
    open() {
      const request = {};
      setTimeout(() => {
        request.result = db;
        if (stores.size === 0) request.onupgradeneeded?.();
        request.onsuccess?.();
      });
      return request;
    },
  };
}

const body = (submission, answers = { smoker: 1 }) => JSON.stringify({ design: 'h', answers, submission });
const IDS = ['c0ffee', '0a1b2c', 'f00d00', '5eed00'];

async function filledQueue() {
  const db = await openQueue(memoryIndexedDB());
  for (const id of IDS) await enqueue(db, 'field', body(id));
  await enqueue(db, 'other', body('b0b0b0'));
  return db;
}

test('the queue keeps the exact bodies per survey, read back in submission-id order, a repeat id once', async () => {
  const db = await filledQueue();
  await enqueue(db, 'field', body('c0ffee'));
  const records = await queued(db, 'field');
  assert.deepEqual(records.map((record) => record.submission), [...IDS].sort());
  assert.deepEqual(records.map((record) => Object.keys(record).sort()), IDS.map(() => ['body', 'slug', 'submission']));
  assert.equal(records.find((record) => record.submission === 'f00d00').body, body('f00d00'));
  assert.deepEqual((await queued(db, 'other')).map((record) => record.submission), ['b0b0b0']);
  await dequeue(db, '0a1b2c');
  assert.equal((await queued(db, 'field')).length, IDS.length - 1);
});

test('a body without a submission id is refused (it could not be sent again safely)', async () => {
  const db = await openQueue(memoryIndexedDB());
  await assert.rejects(() => enqueue(db, 'field', JSON.stringify({ design: 'h', answers: {} })), /submission id/);
  assert.throws(() => submissionOf('not json'));
  await assert.rejects(() => openQueue(null), /IndexedDB/);
});

test('a flush sends one body at a time and drops each the server answered: stored, earlier or refused', async () => {
  const db = await filledQueue();
  const sent = [];
  let running = 0;
  const outcomes = ['stored', 'earlier', 'refused', 'stored'];
  const summary = await flushQueue(db, 'field', async (text) => {
    running += 1;
    assert.equal(running, 1, 'one send at a time');
    await new Promise((resolve) => { setTimeout(resolve, 5); });
    running -= 1;
    sent.push(text);
    const outcome = outcomes[sent.length - 1];
    return outcome === 'refused' ? { outcome, final: true, status: 410, field: null } : { outcome };
  });
  assert.deepEqual(sent, [...IDS].sort().map((id) => body(id)), 'the very bodies, in submission-id order');
  assert.equal(summary.sent, 2);
  assert.equal(summary.earlier, 1);
  assert.deepEqual(summary.refused.map((result) => result.status), [410]);
  assert.equal(summary.lost, null);
  assert.deepEqual(await queued(db, 'field'), []);
  assert.equal((await queued(db, 'other')).length, 1, 'another survey\'s bodies wait for its own page');
});

test('a lost send stops the flush and keeps its body and every later one for the next', async () => {
  const db = await filledQueue();
  let calls = 0;
  const summary = await flushQueue(db, 'field', async () => {
    calls += 1;
    return calls === 2 ? { outcome: 'lost', network: true } : { outcome: 'stored' };
  });
  assert.equal(calls, 2);
  assert.equal(summary.sent, 1);
  assert.equal(summary.waiting, IDS.length - 1);
  assert.deepEqual(summary.lost, { outcome: 'lost', network: true });
  const left = (await queued(db, 'field')).map((record) => record.submission);
  assert.deepEqual(left, [...IDS].sort().slice(1));
  const again = await flushQueue(db, 'field', async () => ({ outcome: 'stored' }));
  assert.equal(again.sent, IDS.length - 1);
  assert.deepEqual(await queued(db, 'field'), []);
});

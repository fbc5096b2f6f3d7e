// The prompt every side of the decoder benchmark evaluates: fixed ids spread over the vocabulary.
'use strict';

function promptIds(length, vocabSize) {
  return Int32Array.from({ length }, (_, i) => (i * 7919 + 13) % vocabSize);
}

module.exports = { promptIds };

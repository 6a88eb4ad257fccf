DROP TABLE operators;

-- The shop's catalogue: what bookshop/db.py loads into the SQLite file on first use.
CREATE TABLE books (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author TEXT NOT NULL,
    topic TEXT NOT NULL,
    price_eur REAL NOT NULL
);
INSERT INTO books (title, author, topic, price_eur) VALUES
    ('The Wine Atlas', 'Hugh Johnson', 'wine', 45.0),
    ('Wine Folly', 'Madeline Puckette', 'wine', 25.0),
    ('The Joy of Cooking', 'Irma Rombauer', 'cooking', 35.0),
    ('Salt Fat Acid Heat', 'Samin Nosrat', 'cooking', 30.0),
    ('A Brief History of Time', 'Stephen Hawking', 'physics', 18.5);

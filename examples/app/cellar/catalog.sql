-- The Cellar's wine catalog: 30 wines. `python -m cellar.db` (run from examples/app) builds
-- cellar/wines.db from this file; the application builds it too, the first time it needs it.
CREATE TABLE wines (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    color TEXT NOT NULL CHECK (color IN ('red', 'white', 'rose', 'sparkling')),
    sweetness TEXT NOT NULL CHECK (sweetness IN ('dry', 'semi-dry', 'semi-sweet', 'sweet')),
    country TEXT NOT NULL,
    grape TEXT NOT NULL,
    price REAL NOT NULL CHECK (price > 0),
    notes TEXT NOT NULL
);

INSERT INTO wines (name, color, sweetness, country, grape, price, notes) VALUES
('Château Margaux', 'red', 'dry', 'France', 'Cabernet Sauvignon', 89.0, 'grand bordeaux, cassis, cedar, for steak and lamb'),
('Côtes du Rhône Villages', 'red', 'dry', 'France', 'Grenache', 14.5, 'spicy, red berries, for barbecue and grilled sausages'),
('Rioja Crianza', 'red', 'dry', 'Spain', 'Tempranillo', 12.9, 'vanilla, cherry, for tapas, barbecue and roast pork'),
('Barolo Riserva', 'red', 'dry', 'Italy', 'Nebbiolo', 54.0, 'roses, tar, for truffle pasta and braised beef'),
('Chianti Classico', 'red', 'dry', 'Italy', 'Sangiovese', 16.0, 'sour cherry, herbs, for pizza and tomato pasta'),
('Malbec Reserva', 'red', 'dry', 'Argentina', 'Malbec', 13.5, 'plum, cocoa, for barbecue, grilled steak and burgers'),
('Zinfandel Old Vine', 'red', 'dry', 'USA', 'Zinfandel', 19.9, 'jammy, pepper, for barbecue ribs and burgers'),
('Pinot Noir Willamette', 'red', 'dry', 'USA', 'Pinot Noir', 27.0, 'silky, strawberry, for salmon and mushrooms'),
('Saperavi Kindzmarauli', 'red', 'semi-sweet', 'Georgia', 'Saperavi', 11.0, 'dark berries, soft sweetness, for khachapuri and dessert'),
('Khvanchkara', 'red', 'semi-sweet', 'Georgia', 'Alexandrouli', 24.0, 'raspberry, velvet, for cheese and fruit'),
('Lambrusco Amabile', 'red', 'semi-sweet', 'Italy', 'Lambrusco', 8.5, 'fizzy, cherry, for pizza and party snacks'),
('Port Ruby Reserve', 'red', 'sweet', 'Portugal', 'Touriga Nacional', 18.0, 'fortified, blackberry, for chocolate and blue cheese'),
('Primitivo di Manduria', 'red', 'semi-dry', 'Italy', 'Primitivo', 15.5, 'ripe plum, for lasagne and barbecue'),
('Cloudy Bay Sauvignon Blanc', 'white', 'dry', 'New Zealand', 'Sauvignon Blanc', 26.0, 'gooseberry, lime, for seafood and goat cheese'),
('Chablis Premier Cru', 'white', 'dry', 'France', 'Chardonnay', 32.0, 'flint, lemon, for oysters and fish'),
('Albariño Rías Baixas', 'white', 'dry', 'Spain', 'Albariño', 17.0, 'peach, sea breeze, for seafood and paella'),
('Grüner Veltliner', 'white', 'dry', 'Austria', 'Grüner Veltliner', 13.0, 'white pepper, green apple, for salads and asparagus'),
('Pinot Grigio delle Venezie', 'white', 'dry', 'Italy', 'Pinot Grigio', 9.5, 'light, pear, for a summer picnic and light fish'),
('Riesling Kabinett', 'white', 'semi-sweet', 'Germany', 'Riesling', 15.0, 'apricot, lime, for spicy asian food and thai curry'),
('Tsinandali', 'white', 'dry', 'Georgia', 'Rkatsiteli', 10.5, 'quince, honey, for grilled fish and salads'),
('Gewürztraminer Alsace', 'white', 'semi-dry', 'France', 'Gewürztraminer', 21.0, 'lychee, rose, for spicy food and curry'),
('Sauternes Château Suduiraut', 'white', 'sweet', 'France', 'Sémillon', 45.0, 'honey, apricot, for foie gras and dessert'),
('Tokaji Aszú 5 Puttonyos', 'white', 'sweet', 'Hungary', 'Furmint', 38.0, 'marmalade, for dessert and blue cheese'),
('Moscato d''Asti', 'white', 'sweet', 'Italy', 'Moscato', 11.5, 'lightly fizzy, peach, for fruit desserts and brunch'),
('Whispering Angel', 'rose', 'dry', 'France', 'Grenache', 22.0, 'strawberry, dry, for a summer picnic and salads'),
('Rosé d''Anjou', 'rose', 'semi-sweet', 'France', 'Grolleau', 9.0, 'candied strawberry, for picnic and light desserts'),
('Champagne Brut Réserve', 'sparkling', 'dry', 'France', 'Chardonnay', 42.0, 'brioche, citrus, for celebration and oysters'),
('Prosecco Superiore', 'sparkling', 'dry', 'Italy', 'Glera', 13.0, 'pear, flowers, for aperitif and celebration'),
('Cava Brut Nature', 'sparkling', 'dry', 'Spain', 'Macabeo', 10.0, 'crisp, almond, for tapas and aperitif'),
('Asti Spumante', 'sparkling', 'sweet', 'Italy', 'Moscato', 9.9, 'sweet, grapey, for dessert and celebration');

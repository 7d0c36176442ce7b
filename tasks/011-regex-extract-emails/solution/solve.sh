mkdir -p reports
python3 extract_bounces.py logs/mail.log reports/bounces.csv
